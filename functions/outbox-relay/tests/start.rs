//! The `outbox-relay` binary as Lambda starts it, refusing to start when its configuration is wrong,
//! and saying why. Its database URL comes from a secret.
//!
//! This test also makes the workspace's test build link the binary the end-to-end tests
//! (`jadpo-e2e`) run, so that they need no build of their own.

use std::path::Path;

use jadpo_e2e::{Backing, Function};

const BINARY: &str = env!("CARGO_BIN_EXE_outbox-relay");

/// A secret given both ways (its value and a reference to it) is refused before anything is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_given_both_ways_is_refused_at_start() {
    let backing = Backing::start().await;
    let mut both = backing.env_for("outbox-relay");
    both.push(("DATABASE_URL".to_owned(), "postgres://127.0.0.1/x".to_owned()));
    let mut function =
        Function::start("outbox-relay", Path::new(BINARY), "http://127.0.0.1:9/.rt", &both);
    assert!(!function.exit_status().await.success());
    let log = function.log();
    assert!(log.contains("both DATABASE_URL and JADPO_SECRET_DATABASE_URL are set"), "{log}");
}
