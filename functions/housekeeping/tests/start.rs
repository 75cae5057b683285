//! The `housekeeping` binary as Lambda starts it, refusing to start when its configuration is wrong,
//! and saying why. Its database URL comes from a secret.
//!
//! This test also makes the workspace's test build link the binary the end-to-end tests
//! (`jadpo-e2e`) run, so that they need no build of their own.

use std::path::Path;

use jadpo_e2e::{Backing, Function};

const BINARY: &str = env!("CARGO_BIN_EXE_housekeeping");

/// A secret that cannot be read stops the start with the variable and the secret named, and
/// nothing of any secret's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_whose_secret_cannot_be_read_refuses_to_start_and_says_why() {
    let backing = Backing::start().await;
    let gone = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf";
    let mut env: Vec<(String, String)> = backing
        .env_for("housekeeping")
        .into_iter()
        .filter(|(k, _)| k != "JADPO_SECRET_DATABASE_URL")
        .collect();
    env.push(("JADPO_SECRET_DATABASE_URL".to_owned(), format!("{gone}#value")));
    let mut function =
        Function::start("housekeeping", Path::new(BINARY), "http://127.0.0.1:9/.rt", &env);
    let status = function.exit_status().await;
    assert!(!status.success(), "{status}");
    let log = function.log();
    assert!(
        log.contains(&format!("JADPO_SECRET_DATABASE_URL: cannot read secret {gone}")),
        "{log}"
    );
    assert!(!log.contains("postgres://"), "a secret's value in the log: {log}");
}
