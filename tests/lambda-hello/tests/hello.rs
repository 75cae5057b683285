//! The cold-start benchmark's references, run as Lambda runs them: the hello-world answers the
//! benchmark's own Runtime API, which times its first request; the secrets reference reads its
//! secrets (moto's Secrets Manager) before it asks for work, and stops when one is unreadable.

use std::path::Path;
use std::time::Duration;

use jadpo_e2e::{Backing, Function, HELLO_SECRETS, HELLO_WORLD, Invocation, RuntimeApi};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchmark_runtime_api_times_a_cold_start_and_relays_an_invocation() {
    let mut api = RuntimeApi::start().await;
    let mut function = Function::start(
        HELLO_WORLD,
        Path::new(env!("CARGO_BIN_EXE_hello-world")),
        &api.address(),
        &[],
    );
    let first = api.first_request(Duration::from_secs(30)).await;
    assert!(first > function.started(), "the first request came after the spawn");
    let event = json!({"hello": "world"});
    let answer = api.invoke(event.clone(), Duration::from_secs(30)).await;
    assert_eq!(answer, Invocation::Response(event), "hello-world echoes its event");
    let (rss, peak) = function.memory_kib();
    assert!(rss > 0 && peak >= rss, "rss {rss} KiB, peak {peak} KiB");
    function.stop();
    assert!(function.exited().is_some());
}

/// The benchmark's second reference reads the secrets it is given before it asks for work (so its
/// init holds the round trip the functions' does), then echoes; an unreadable secret stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secrets_reference_reads_its_secrets_before_its_first_request() {
    let backing = Backing::start().await;
    let env = backing.env_for("commit");
    assert_eq!(env.iter().filter(|(k, _)| k.starts_with("JADPO_SECRET_")).count(), 3, "{env:?}");
    let mut api = RuntimeApi::start().await;
    let mut function = Function::start(
        HELLO_SECRETS,
        Path::new(env!("CARGO_BIN_EXE_hello-secrets")),
        &api.address(),
        &env,
    );
    api.first_request(Duration::from_secs(30)).await;
    let event = json!({"hello": "secrets"});
    let answer = api.invoke(event.clone(), Duration::from_secs(30)).await;
    assert_eq!(answer, Invocation::Response(event));
    function.stop();

    let mut missing = env.clone();
    missing.push((
        "JADPO_SECRET_EXTRA".to_owned(),
        "arn:aws:secretsmanager:us-east-1:1:secret:gone".to_owned(),
    ));
    let mut function = Function::start(
        HELLO_SECRETS,
        Path::new(env!("CARGO_BIN_EXE_hello-secrets")),
        "http://127.0.0.1:9/.rt",
        &missing,
    );
    assert!(!function.exit_status().await.success(), "{}", function.log());
}
