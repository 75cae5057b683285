//! A reader that closes the pipe (`jadpo keys list | head -1`) ends the command quietly with
//! success, as for any Unix tool — not a panic and exit 101. Standard output is one end of a
//! connected socket pair whose other end is closed before the process starts, so every write it
//! makes fails as a write to a closed pipe does (`EPIPE`), whatever the timing.

use crate::common;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Output, Stdio};

use common::{jadpo, ok};
use jadpo_test_harness::SqliteTestDb;

/// Runs `jadpo args` against `url` (or none) with standard output a pipe nobody reads.
fn into_closed_pipe(url: Option<&str>, args: &[&str]) -> Output {
    let (reader, writer) = UnixStream::pair().unwrap_or_else(|e| panic!("cannot make a pair: {e}"));
    drop(reader);
    let mut cmd = common::command(url, args);
    cmd.stdout(Stdio::from(OwnedFd::from(writer))).stderr(Stdio::piped());
    cmd.output().unwrap_or_else(|e| panic!("cannot run jadpo: {e}"))
}

fn quiet_success(args: &[&str], out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "jadpo {args:?} into a closed pipe: {:?}, {stderr}", out.status);
    assert!(!stderr.contains("panicked") && !stderr.contains("error"), "jadpo {args:?}: {stderr}");
}

#[test]
fn verbs_without_a_store_stop_quietly() {
    for args in [&["manifest"][..], &["manifest", "--json"], &["sealing-key", "new", "k1"]] {
        quiet_success(args, &into_closed_pipe(None, args));
    }
}

#[tokio::test]
async fn listing_verbs_stop_quietly_and_export_too() {
    let db = SqliteTestDb::migrated().await;
    let url = db.url();
    ok(&jadpo(&url, &["migrate", "apply"]));
    let issue = ["keys", "issue", "--service", "web", "--scope", "*", "--operator", "ann"];
    ok(&jadpo(&url, &issue));
    // Each of these prints at least a line on this store (a key, its issue, a header).
    for args in [
        &["keys", "list"][..],
        &["keys", "list", "--json"],
        &["actions", "list"],
        &["runs", "list"],
        &["export"],
    ] {
        quiet_success(args, &into_closed_pipe(Some(&url), args));
    }
    // The pipe is what is refused, nothing else: the same verb into a reader works.
    let listed = ok(&jadpo(&url, &["keys", "list"]));
    assert!(listed.contains("web"), "{listed}");
}
