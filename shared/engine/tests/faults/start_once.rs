//! A run started under an `Idempotency-Key` starts once, on both adapters: concurrent requests
//! with one key start one run and all answer it; then a crash loop fails each start before its
//! response is stored or after its commit (before the reply), the client retries with the same
//! key, and every key ends with exactly one run that finishes (printed: lost 0, repeated 0).
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_engine::Engine;
use jadpo_engine::workflow::runs::{StartKey, Started, start_run_once};
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};

const CRASH_RUNS: usize = 300;
const POINTS: [&str; 2] = ["workflow.before_start_response", "workflow.after_start_commit"];

async fn start_on(engine: &Engine, key: &str, order: &str) -> Result<Started, String> {
    let input = json!({"order_id": order});
    let digest = format!("digest-{order}");
    let key = StartKey { scope: "web", key, digest: &digest };
    start_run_once(engine, "checkout", input, None, None, key).await.map_err(|e| e.to_string())
}

async fn start(env: &Env, key: &str, order: &str) -> Result<Started, String> {
    start_on(&env.engine, key, order).await
}

fn run_id(started: &Started) -> Value {
    match started {
        Started::New { body, .. } | Started::Replayed { body, .. } => body["run_id"].clone(),
    }
}

/// Every run in the store: one per key so far.
async fn runs(env: &Env) -> i64 {
    env.count("main", "SELECT count(*) AS n FROM workflow_executions").await
}

async fn concurrent_starts_start_one_run(kind: Kind) {
    let env = Env::shop(kind).await;
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let engine = env.engine.clone();
            tokio::spawn(async move { start_on(&engine, "same", "o-1").await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        let answer = task.await.unwrap_or_else(|e| panic!("{e}"));
        answers.push(answer.unwrap_or_else(|e| panic!("{kind:?}: {e}")));
    }
    let new = answers.iter().filter(|a| matches!(a, Started::New { .. })).count();
    assert_eq!(new, 1, "{kind:?}: {answers:?}");
    assert!(answers.iter().all(|a| run_id(a) == run_id(&answers[0])), "{kind:?}: {answers:?}");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM workflow_executions").await, 1);
}

async fn crashed_starts(kind: Kind, mut rng: fastrand::Rng) -> Vec<String> {
    let mut env = Env::shop(kind).await;
    let (mut lost, mut repeated) = (Vec::new(), Vec::new());
    let crash_runs = jadpo_test_env::sized(CRASH_RUNS);
    for n in 0..crash_runs {
        let (key, order) = (format!("k-{n}"), format!("o-{n}"));
        // Each point alone first, then at random.
        let (point, crash) = match POINTS.get(n) {
            Some(point) => (*point, true),
            None => (POINTS[rng.usize(..POINTS.len())], rng.bool()),
        };
        if crash {
            fail::cfg(point, "1*return").unwrap_or_else(|e| panic!("{e}"));
        }
        let first = start(&env, &key, &order).await;
        fail::remove(point);
        assert_eq!(first.is_err(), crash, "{kind:?}: the fault at {point} did not fire");
        // The client saw no answer (or an error) and retries with the same key.
        let retry = start(&env, &key, &order).await.unwrap_or_else(|e| panic!("{e}"));
        if let Ok(first) = &first {
            assert_eq!(run_id(first), run_id(&retry), "{kind:?}: the retry answered another run");
        }
        env.settle().await;
        let expected = i64::try_from(n + 1).unwrap_or(i64::MAX);
        match runs(&env).await - expected {
            0 => {}
            d if d < 0 => lost.push(format!("{kind:?} {key} at {point}: no run")),
            d => repeated.push(format!("{kind:?} {key} at {point}: {d} runs too many")),
        }
        // After a repeat the count is off for good: count it once.
        if !repeated.is_empty() || !lost.is_empty() {
            break;
        }
    }
    let waiting = "SELECT count(*) AS n FROM workflow_executions WHERE status <> 'waiting'";
    let unfinished = env.count("main", waiting).await;
    println!(
        "{kind:?}: {crash_runs} starts, each point alone then a random half failed before or after their commit: lost \
         {}, repeated {}, runs not at their wait {unfinished}",
        lost.len(),
        repeated.len()
    );
    let mut failures = lost;
    failures.extend(repeated);
    if unfinished > 0 {
        failures.push(format!("{kind:?}: {unfinished} runs never reached their wait"));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_start_starts_once_even_when_it_crashes() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        concurrent_starts_start_one_run(kind).await;
    }
    jadpo_test_env::crash_loop_on_both(&POINTS, crashed_starts).await;
}
