//! The deployed functions link only what they run: none links SQLite, and only `commit`, which
//! serves HTTP, links axum. Read from `cargo tree` (normal dependencies, offline, from the lock
//! file), so a dependency added to a shared crate that drags either in fails here.

use std::process::Command;

const FUNCTIONS: [&str; 5] =
    ["commit", "outbox-relay", "delivery", "schedule-tick", "housekeeping"];

/// The crate names in `package`'s normal dependency tree.
fn tree(package: &str) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "-p", package])
        .output()
        .unwrap_or_else(|e| panic!("cargo tree -p {package}: {e}"));
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn no_function_links_sqlite_and_only_commit_links_axum() {
    for f in FUNCTIONS {
        let crates = tree(&format!("jadpo-fn-{f}"));
        assert!(
            crates.iter().any(|c| c == "jadpo-engine"),
            "{f}: the tree was not read: {crates:?}"
        );
        for unwanted in ["rusqlite", "jadpo-store-sqlite", "jadpo-local"] {
            assert!(!crates.iter().any(|c| c == unwanted), "{f} links {unwanted}");
        }
        let axum = crates.iter().any(|c| c == "axum");
        assert_eq!(axum, f == "commit", "{f}: links axum = {axum}");
    }
}

#[test]
fn the_local_process_links_what_the_functions_leave_out() {
    // The check above would pass on a tree that never shows these crates at all.
    let crates = tree("jadpo-local");
    for wanted in ["rusqlite", "axum", "jadpo-http"] {
        assert!(crates.iter().any(|c| c == wanted), "jadpo-local should link {wanted}");
    }
}
