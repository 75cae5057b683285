//! `jadpo-e2e`: the function binaries as AWS Lambda runs them — separate processes that poll a
//! Runtime API for work — rather than their handlers called in-process.
//!
//! - [`built`] finds the five function binaries the workspace's test build made (no second
//!   build); [`release`] compiles them in the deployed profile for the cold-start benchmark.
//! - [`Backing`] is what a deployment talks to: PostgreSQL, the SQS API (moto), a sink, and a
//!   [`SinkGate`] in front of it that can hold a connection's calls.
//! - [`Function`] runs one binary with the Lambda environment variables; like [`Watch`], it is a
//!   child process whose output goes to a log file printed when a test fails, killed when
//!   dropped.
//! - [`Watch`] is `cargo lambda watch --only-lambda-apis`: the Runtime API emulator the functions
//!   poll, and `cargo lambda invoke` to send it events.
//! - [`RuntimeApi`] is a minimal Runtime API of our own that timestamps each request, for the
//!   cold-start benchmark (watch cannot say when a process first asked for work).
//!
//! Everything here panics with a message saying what failed and how to fix it: it is test code.

mod backing;
mod build;
mod function;
mod process;
mod runtime_api;
mod watch;

use std::path::PathBuf;

pub use backing::{Backing, SinkGate, fixture, json_fixture, place_order};
pub use build::{built, release};
pub use function::Function;
pub use runtime_api::{Invocation, RuntimeApi};
pub use watch::Watch;

/// The five deployed functions, by binary name.
pub const FUNCTIONS: [&str; 5] =
    ["commit", "outbox-relay", "delivery", "schedule-tick", "housekeeping"];

/// The cold-start reference binary (`tests/lambda-hello`).
pub const HELLO_WORLD: &str = "hello-world";

/// The cold-start reference that also reads its secrets from Secrets Manager (`tests/lambda-hello`).
pub const HELLO_SECRETS: &str = "hello-secrets";

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// `cargo-lambda`: `$JADPO_CARGO_LAMBDA`, else the project's `.venv-tools` (which `make tools`
/// creates, and `make test` runs), else `PATH`; panics saying how to get it.
pub fn cargo_lambda() -> PathBuf {
    if let Some(path) = std::env::var_os("JADPO_CARGO_LAMBDA") {
        return PathBuf::from(path);
    }
    let venv = workspace_root().join(".venv-tools/bin/cargo-lambda");
    if venv.is_file() {
        return venv;
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).map(|d| d.join("cargo-lambda")).find(|c| c.is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!(
            "these tests need cargo-lambda: run `make tools` (it installs cargo-lambda from PyPI \
             into .venv-tools), or set JADPO_CARGO_LAMBDA to a cargo-lambda binary"
        )
    })
}
