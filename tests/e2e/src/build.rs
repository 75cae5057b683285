//! Compiling the function binaries for a run. The calling `cargo test` or `cargo bench` holds the
//! lock on `target/`, so the binaries are built in `target/e2e` (debug, for the end-to-end test)
//! or `target/coldstart` (release, the deployed profile, for the benchmark); cargo's own
//! freshness check makes a second run cheap.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::workspace_root;

/// Which cargo profile to build with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// `dev`, into `target/e2e/debug`.
    Debug,
    /// `release` (the deployed profile: size-optimised, LTO, stripped), into
    /// `target/coldstart/release`.
    Release,
}

impl Profile {
    fn target_dir(self) -> PathBuf {
        let name = match self {
            Self::Debug => "e2e",
            Self::Release => "coldstart",
        };
        workspace_root().join("target").join(name)
    }

    fn dir_name(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Release => "release",
        }
    }
}

/// The workspace package whose binary is `bin`: `jadpo-fn-<name>` for a function, the
/// benchmark's reference for `hello-world`.
fn package_of(bin: &str) -> String {
    match bin {
        crate::HELLO_WORLD | crate::HELLO_SECRETS => "jadpo-lambda-hello".to_owned(),
        function => format!("jadpo-fn-{function}"),
    }
}

/// Builds the binaries named `bins` (each a `[[bin]]` of a workspace package) and returns their
/// paths by name; panics with cargo's output when the build fails.
pub fn build(profile: Profile, bins: &[&str]) -> BTreeMap<String, PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = profile.target_dir();
    let mut command = Command::new(&cargo);
    command.current_dir(workspace_root()).args(["build", "--quiet"]);
    if profile == Profile::Release {
        command.arg("--release");
    }
    // By package, not `--workspace`: features are unified across the packages a build selects,
    // and the local process's `sqlite` feature must not reach the deployed binaries.
    for bin in bins {
        command.args(["-p", &package_of(bin), "--bin", bin]);
    }
    eprintln!("building {} into {} ...", bins.join(", "), target_dir.display());
    let output = command
        .env("CARGO_TARGET_DIR", &target_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo:?}: {e}"));
    assert!(
        output.status.success(),
        "building the function binaries failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    bins.iter()
        .map(|bin| {
            let path = target_dir.join(profile.dir_name()).join(bin);
            assert!(path.is_file(), "cargo built no {}", path.display());
            ((*bin).to_owned(), path)
        })
        .collect()
}
