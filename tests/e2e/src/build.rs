//! The function binaries a run uses.
//!
//! The tests use the debug binaries the workspace's own test build made ([`built`]): every
//! function package has an integration test of its own (its start-up refusals), so
//! `cargo nextest run --workspace` (what `make test` runs) links each function's binary into
//! the workspace's target directory beside the test executables, with no second build. Those
//! binaries are the ones that ship: no function depends, in any build, on a crate that links
//! SQLite or on a feature another package could turn on (the fault points, compiled in by the
//! test build, stay inert unless a test arms them in its own process).
//!
//! The cold-start benchmark needs the deployed profile (size-optimised, LTO, stripped), which no
//! test build makes: [`release`] compiles it in `target/coldstart`, since the calling
//! `cargo bench` holds the lock on the workspace's target directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::workspace_root;

/// The workspace package whose binary is `bin`: `jadpo-fn-<name>` for a function, the
/// benchmark's reference for `hello-world`.
fn package_of(bin: &str) -> String {
    match bin {
        crate::HELLO_WORLD | crate::HELLO_SECRETS => "jadpo-lambda-hello".to_owned(),
        function => format!("jadpo-fn-{function}"),
    }
}

/// The directory of the running test executable's profile (`target/debug` for
/// `target/debug/deps/<test>-<hash>`), where cargo links the packages' binaries.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("no current executable: {e}"));
    let deps = exe.parent().unwrap_or_else(|| panic!("{} has no folder", exe.display()));
    let profile = if deps.file_name().is_some_and(|n| n == "deps") { deps.parent() } else { None };
    profile.unwrap_or(deps).to_owned()
}

/// The binaries named `bins`, from the workspace's test build; panics saying how to build them
/// when one is missing.
pub fn built(bins: &[&str]) -> BTreeMap<String, PathBuf> {
    let dir = profile_dir();
    bins.iter()
        .map(|bin| {
            let path = dir.join(bin);
            assert!(
                path.is_file(),
                "no {} (package {}): the end-to-end tests run the binaries the workspace's test \
                 build links; run them with `make test` or `cargo nextest run --workspace` (or \
                 select the function packages too: `-p jadpo-e2e -p {}`)",
                path.display(),
                package_of(bin),
                package_of(bin)
            );
            warn_if_older(&path);
            ((*bin).to_owned(), path)
        })
        .collect()
}

/// A binary older than the test executable may predate the code under test (a run that
/// selected only this package does not relink the functions): said on standard error, which
/// the test runner shows with a failure.
fn warn_if_older(binary: &Path) {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let exe = std::env::current_exe().ok();
    if let (Some(bin), Some(test)) = (modified(binary), exe.as_deref().and_then(modified)) {
        if bin < test {
            eprintln!(
                "note: {} is older than this test executable; if the functions changed, build \
                 them too (`cargo nextest run --workspace`)",
                binary.display()
            );
        }
    }
}

/// Compiles the binaries named `bins` (each a `[[bin]]` of a workspace package) in the release
/// profile, the deployed one, into `target/coldstart`, and returns their paths by name; panics
/// with cargo's output when the build fails.
pub fn release(bins: &[&str]) -> BTreeMap<String, PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = workspace_root().join("target").join("coldstart");
    let mut command = Command::new(&cargo);
    command.current_dir(workspace_root()).args(["build", "--quiet", "--release"]);
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
            let path = target_dir.join("release").join(bin);
            assert!(path.is_file(), "cargo built no {}", path.display());
            ((*bin).to_owned(), path)
        })
        .collect()
}
