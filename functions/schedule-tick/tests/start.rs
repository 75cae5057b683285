//! The `schedule-tick` binary as Lambda starts it, refusing to start when its configuration is wrong,
//! and saying why. A deployed function links no SQLite.
//!
//! This test also makes the workspace's test build link the binary the end-to-end tests
//! (`jadpo-e2e`) run, so that they need no build of their own.

use std::path::Path;

use jadpo_e2e::{Backing, Function};

const BINARY: &str = env!("CARGO_BIN_EXE_schedule-tick");

/// The deployed functions are built without SQLite: a `sqlite://` URL is refused at start with a
/// message that says so, not a crash or a silent fallback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_given_a_sqlite_url_refuses_to_start_and_says_why() {
    let backing = Backing::start().await;
    let mut env: Vec<(String, String)> = backing
        .env_for("schedule-tick")
        .into_iter()
        .filter(|(k, _)| k != "JADPO_SECRET_DATABASE_URL")
        .collect();
    env.push(("DATABASE_URL".to_owned(), "sqlite://main.db".to_owned()));
    let mut function =
        Function::start("schedule-tick", Path::new(BINARY), "http://127.0.0.1:9/.rt", &env);
    let status = function.exit_status().await;
    assert!(!status.success(), "{status}");
    let log = function.log();
    assert!(log.contains("this binary is built without SQLite"), "{log}");
    assert!(log.contains("give it a postgres:// URL"), "{log}");
}
