//! A crash at every boundary of a checkout run's commands — before the capability runs, after it
//! ran and before its result commits, after the commit and before the next command is sent, and
//! in the relay that resends what was not acknowledged — first at each one alone, then at random
//! sets of them (each at the first or the second command that reaches it), hundreds of runs on
//! each adapter. However it crashes, once the queue has redelivered and the relay resent: the run
//! waits for its shipment with one reservation and one charge in its log, and the payment
//! provider was asked under one key only, `{run}:charge`, never with two different requests.
//! Prints each adapter's runs, the requests the provider received and the keys they came under.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_engine::workflow::runs::{find_run, run_events, start_run};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::{Value, json};

const POINTS: &[&str] = &[
    "command.before_capability",
    "command.before_result_commit",
    "command.after_result_commit",
    "relay.commands.after_claim",
    "relay.commands.after_send",
];

/// Runs per adapter: each point alone (at the first and the second command), then random sets.
const RUNS: usize = 300;

/// How a point fails in a run: at the first time it is reached (reserve's command), or only at
/// the second (charge's).
const WHEN: [&str; 2] = ["1*return", "1*off->1*return"];

/// The provider's requests for `run`: an error for two different requests under one key or a
/// charge under any other key; else how many requests.
fn charges(env: &Env, run: &str) -> Result<usize, String> {
    let key = format!("{run}:charge");
    let received = env.sinks.received("payments");
    let mine: Vec<&Value> = received
        .iter()
        .filter(|m| m["idempotency_key"].as_str().is_some_and(|k| k.starts_with(run)))
        .collect();
    if mine.is_empty() {
        return Err("lost: the provider was never asked to charge".into());
    }
    for m in &mine {
        if m["idempotency_key"] != json!(key) {
            return Err(format!("repeated: a charge under another key: {m}"));
        }
        if m["body"] != mine[0]["body"] {
            return Err(format!("two different requests under key {key}"));
        }
    }
    Ok(mine.len())
}

async fn one_run(
    env: &mut Env,
    n: usize,
    crash: &[(&'static str, String)],
) -> Result<usize, String> {
    let order = format!("o{n}");
    let started = start_run(&env.engine, "checkout", json!({"order_id": order}), None, None).await;
    let run = started.map_err(|e| format!("the start failed: {e}"))?.run_id;
    for (point, when) in crash {
        fail::cfg(*point, when.as_str()).map_err(|e| e.to_string())?;
    }
    env.settle().await;
    for (point, _) in crash {
        fail::remove(point);
    }
    env.settle().await;
    let (_, state) = find_run(&env.engine, &run).await.map_err(|e| e.to_string())?;
    if state.status != ExecutionStatus::Waiting {
        return Err(format!("lost: the run is {:?}, not waiting for its shipment", state.status));
    }
    let events = run_events(&env.engine, &run).await.map_err(|e| e.to_string())?;
    let completed: Vec<String> = events
        .iter()
        .filter(|(e, _)| e.event_type == "command.completed")
        .map(|(e, _)| e.payload["node"].as_str().unwrap_or_default().to_owned())
        .collect();
    if completed != ["reserve", "charge"] {
        return Err(format!("the run's log holds the completions {completed:?}"));
    }
    charges(env, &run)
}

#[derive(Default)]
struct Tally {
    runs: usize,
    failures: Vec<String>,
    requests: usize,
}

async fn adapter(kind: Kind, rng: &mut fastrand::Rng) -> Tally {
    let mut env = Env::shop(kind).await;
    let mut tally = Tally::default();
    let fixed: Vec<Vec<_>> = WHEN
        .iter()
        .flat_map(|when| {
            POINTS
                .iter()
                .map(move |p| jadpo_test_env::alone(p, when, "command.after_result_commit"))
        })
        .collect();
    let random: Vec<Vec<_>> = (fixed.len()..jadpo_test_env::sized(RUNS))
        .map(|_| {
            let chosen: Vec<_> = POINTS.iter().filter(|_| rng.u8(..10) < 3).collect();
            // Reserve's command, charge's, or a retry of either.
            chosen.into_iter().map(|p| (*p, jadpo_test_env::fails_after(rng.usize(..4)))).collect()
        })
        .collect();
    for (n, crash) in fixed.into_iter().chain(random).enumerate() {
        tally.runs += 1;
        match one_run(&mut env, n, &crash).await {
            Ok(requests) => tally.requests += requests,
            Err(e) => tally.failures.push(format!("{kind:?} run {n} at {crash:?}: {e}")),
        }
    }
    println!(
        "{kind:?}: {} runs, {} lost or repeated; the provider received {} charge requests, each \
         run's under its one key",
        tally.runs,
        tally.failures.len(),
        tally.requests
    );
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_survives_a_crash_at_any_command_boundary() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        adapter(kind, &mut rng).await.failures
    })
    .await;
}
