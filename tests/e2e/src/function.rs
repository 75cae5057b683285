//! One function binary running as Lambda runs it: a process with the Lambda environment
//! variables, polling the Runtime API at `AWS_LAMBDA_RUNTIME_API`, its output logged
//! ([`Logged`]).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::process::Logged;

/// A running function process.
pub struct Function {
    name: String,
    process: Logged,
    started: Instant,
}

impl Function {
    /// Starts `binary` as the function `name`, polling `runtime_api` (`http://host:port/path`),
    /// with `env` added to the Lambda variables.
    pub fn start(name: &str, binary: &Path, runtime_api: &str, env: &[(String, String)]) -> Self {
        let mut command = Command::new(binary);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "e2e")
            .envs(env.iter().map(|(k, v)| (k, v)));
        let started = Instant::now();
        let process =
            Logged::spawn(format!("function {name} ({})", binary.display()), &mut command);
        Self { name: name.to_owned(), process, started }
    }

    /// When the process was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Whether the process has exited (a function that fails to start exits).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.process.exited()
    }

    /// Waits (30 s at most) for the process to exit, as a function that refuses to start does;
    /// its exit status.
    pub async fn exit_status(&mut self) -> std::process::ExitStatus {
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            let waited = started.elapsed();
            assert!(waited < std::time::Duration::from_secs(30), "{} did not exit", self.name);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Its resident and peak resident memory in KiB, from `/proc/<pid>/status`.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .unwrap_or_else(|e| panic!("{} is not running: {e}", self.name));
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc/{}/status", self.pid()))
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Everything the process has written so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// Stops the process.
    pub fn stop(&mut self) {
        self.process.stop();
    }
}
