//! One function binary running as Lambda runs it: a process with the Lambda environment
//! variables, polling the Runtime API at `AWS_LAMBDA_RUNTIME_API`. Its output goes to a log file
//! that a failing test prints; the process is killed when dropped (it is our own child, so no
//! process group is signalled).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// A running function process.
pub struct Function {
    name: String,
    child: Child,
    started: Instant,
    log: tempfile::NamedTempFile,
}

impl Function {
    /// Starts `binary` as the function `name`, polling `runtime_api` (`http://host:port/path`),
    /// with `env` added to the Lambda variables.
    pub fn start(name: &str, binary: &Path, runtime_api: &str, env: &[(String, String)]) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("log file: {e}"));
        let out = log.reopen().unwrap_or_else(|e| panic!("log file: {e}"));
        let err = out.try_clone().unwrap_or_else(|e| panic!("log file: {e}"));
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
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let started = Instant::now();
        let child =
            command.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        Self { name: name.to_owned(), child, started, log }
    }

    /// When the process was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited (a function that fails to start exits).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
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
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Stops the process.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("---- log of function {} ----\n{}", self.name, self.log());
        }
    }
}
