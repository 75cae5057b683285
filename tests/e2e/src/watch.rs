//! `cargo lambda watch --only-lambda-apis`: cargo-lambda's emulator of the Lambda control plane,
//! without its own build-and-run of the function (the test starts the binaries it built, so each
//! is a process it can watch and stop). Each function polls `/.rt/<name>/…`; `cargo lambda
//! invoke <name>` queues an event for it and prints the function's answer.

use std::process::{Command, Stdio};
use std::time::Duration;

use jadpo_test_harness::{free_port, wait_for_port};
use serde_json::Value;

use crate::process::Logged;
use crate::{cargo_lambda, workspace_root};

/// A running `cargo lambda watch`, stopped when dropped.
pub struct Watch {
    _process: Logged,
    port: u16,
}

impl Watch {
    /// Starts the emulator on a free port of 127.0.0.1 and waits until it listens.
    pub fn start() -> Self {
        let port = free_port().unwrap_or_else(|e| panic!("cargo lambda watch: {e}"));
        let mut command = Command::new(cargo_lambda());
        command
            .current_dir(workspace_root())
            .args(["lambda", "watch", "--only-lambda-apis", "--invoke-address", "127.0.0.1"])
            .args(["--invoke-port", &port.to_string()]);
        let watch =
            Self { _process: Logged::spawn("cargo lambda watch".into(), &mut command), port };
        wait_for_port(port, "cargo lambda watch", Duration::from_secs(60));
        watch
    }

    /// The `AWS_LAMBDA_RUNTIME_API` for the function `name`.
    pub fn runtime_api(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/.rt/{name}", self.port)
    }

    /// Invokes the function `name` with `event` through `cargo lambda invoke` and returns its
    /// JSON answer; panics with the tool's output when the invocation fails.
    pub async fn invoke(&self, name: &str, event: &Value) -> Value {
        let data = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("event file: {e}"));
        std::fs::write(data.path(), event.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let output = tokio::process::Command::new(cargo_lambda())
            .args(["lambda", "invoke", name, "--invoke-address", "127.0.0.1"])
            .args(["--invoke-port", &self.port.to_string(), "--output-format", "json"])
            .arg("--data-file")
            .arg(data.path())
            .stdin(Stdio::null())
            // A test that gives up on an invocation (its function killed) ends the client too.
            .kill_on_drop(true)
            .output()
            .await
            .unwrap_or_else(|e| panic!("cannot run cargo lambda invoke: {e}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "cargo lambda invoke {name} failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!("cargo lambda invoke {name} printed no JSON ({e}): {stdout}")
        })
    }
}
