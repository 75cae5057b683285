//! A cancellation takes no expected revision, so a command of the same run completing between
//! the cancellation's read and its commit is not the caller's conflict: the cancellation is
//! decided again on the moved run and commits, on both adapters. A request that names its
//! revision (an external event) still gets its conflict.
//!
//! The command completes, for real, at the fault point just before the cancellation commits.
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use std::sync::{Arc, Mutex};

use jadpo_engine::dispatch::dispatch;
use jadpo_engine::workflow::runs::{EngineError, cancel_run, find_run, post_event, start_run};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::json;

const POINT: &str = "workflow.before_transition_commit";

/// What races the transition under test.
enum Race {
    /// The run's pending command completes (its message, as sent).
    Command(String),
    /// The run is cancelled.
    Cancel(String),
}

/// Runs `race`, once, when the next transition reaches [`POINT`]; the flag is emptied when it ran.
fn race_at_the_point(env: &Env, race: Race) -> Arc<Mutex<Option<Race>>> {
    let slot = Arc::new(Mutex::new(Some(race)));
    let (engine, pending) = (env.engine.clone(), Arc::clone(&slot));
    let callback = move || {
        let Some(race) = pending.lock().ok().and_then(|mut r| r.take()) else { return };
        tokio::task::block_in_place(|| {
            let handle = tokio::runtime::Handle::current();
            let done = match race {
                Race::Command(body) => {
                    handle.block_on(dispatch(&engine, &body)).map(|_| ()).map_err(|e| e.to_string())
                }
                Race::Cancel(run) => handle
                    .block_on(cancel_run(&engine, &run, "raced", None))
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            };
            assert!(done.is_ok(), "the racing change failed: {done:?}");
        });
    };
    fail::cfg_callback(POINT, callback).unwrap_or_else(|e| panic!("{e}"));
    slot
}

fn raced(slot: &Arc<Mutex<Option<Race>>>) -> bool {
    slot.lock().map(|r| r.is_none()).unwrap_or(false)
}

async fn a_cancellation_retries_a_command_that_completed_meanwhile(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let started = start_run(&env.engine, "checkout", json!({"order_id": "o-1"}), None, None).await;
    let run = started.unwrap_or_else(|e| panic!("{e}")).run_id;
    let before = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}")).1.revision;
    let message = env.rx.try_recv().unwrap_or_else(|e| panic!("no command was sent: {e}"));
    let slot = race_at_the_point(&env, Race::Command(message.body));
    let cancelled = cancel_run(&env.engine, &run, "changed my mind", None).await;
    fail::remove(POINT);
    assert!(raced(&slot), "the command did not race");
    let state = cancelled.unwrap_or_else(|e| panic!("{kind:?}: the cancellation failed: {e}"));
    assert_eq!(state.status, ExecutionStatus::Cancelling);
    let (_, stored) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(stored.revision > before + 1, "the command's result and the cancellation both landed");
    assert!(stored.data.contains_key("reservation"), "{kind:?}: {:?}", stored.data);
    assert_eq!(stored.status, ExecutionStatus::Cancelling);
}

async fn an_event_with_a_revision_keeps_its_conflict(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let started = start_run(&env.engine, "checkout", json!({"order_id": "o-2"}), None, None).await;
    let run = started.unwrap_or_else(|e| panic!("{e}")).run_id;
    env.drain().await; // reserve, then charge: the run waits for its shipment
    let (_, waiting) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(waiting.status, ExecutionStatus::Waiting);
    let slot = race_at_the_point(&env, Race::Cancel(run.clone()));
    let posted =
        post_event(&env.engine, &run, "shipment.confirmed", json!({}), waiting.revision, None)
            .await;
    fail::remove(POINT);
    assert!(raced(&slot), "the cancellation did not race");
    assert!(
        matches!(
            posted,
            Err(EngineError::Transition(jadpo_core::ports::TransitionError::StaleRevision { .. }))
        ),
        "{kind:?}: {posted:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transitions_without_a_revision_retry_their_conflict() {
    let _scenario = fail::FailScenario::setup();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        a_cancellation_retries_a_command_that_completed_meanwhile(kind).await;
        an_event_with_a_revision_keeps_its_conflict(kind).await;
    }
}
