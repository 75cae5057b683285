//! The `delivery` binary as Lambda starts it, refusing to start when its configuration is wrong,
//! and saying why. Its queue is what it deletes handled messages from.
//!
//! This test also makes the workspace's test build link the binary the end-to-end tests
//! (`jadpo-e2e`) run, so that they need no build of their own.

use std::path::Path;

use jadpo_e2e::{Backing, Function};

const BINARY: &str = env!("CARGO_BIN_EXE_delivery");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_without_its_queue_url_refuses_to_start_and_says_why() {
    let backing = Backing::start().await;
    let env: Vec<(String, String)> =
        backing.env_for("delivery").into_iter().filter(|(k, _)| k != "JADPO_QUEUE_URL").collect();
    let mut function =
        Function::start("delivery", Path::new(BINARY), "http://127.0.0.1:9/.rt", &env);
    let status = function.exit_status().await;
    assert!(!status.success(), "{status}");
    let log = function.log();
    assert!(log.contains("set JADPO_QUEUE_URL to the delivery queue's URL"), "{log}");
    assert!(!log.contains("MissingQueue"), "the message, not the Debug form: {log}");
}
