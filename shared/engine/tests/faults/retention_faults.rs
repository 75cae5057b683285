//! Retention under crashes, on both adapters: housekeeping's retention of finished runs and idle
//! Sessions crashes before a batch, before or after its commit (alone and in random sets, at any
//! of its first batches); once the crashed pass's lease has run out and the next pass has run,
//! every finished run past its retention is gone with all of its rows (no event, command or
//! dispatch row outlives its run), no Session names a missing run, the unfinished run and the
//! young Session are untouched, and the next pass fails for nothing.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use chrono::Duration;
use jadpo_test_env::{Env, Kind};

use crate::retention_app;
use retention_app::{env, session, start};

const POINTS: &[&str] = &[
    "housekeeping.before_batch",
    "housekeeping.before_batch_commit",
    "housekeeping.after_batch_commit",
];

/// Runs per adapter, after each point alone.
const RANDOM: usize = 40;

const FINISHED: usize = 7;

/// Seven finished runs eleven days old (one bound to a Session), a Session bound to no run six
/// days old, a run that never finished, and a Session made a moment ago.
async fn aged(kind: Kind) -> Env {
    let mut env = env(kind).await;
    session(&env, "bound").await;
    session(&env, "idle").await;
    start(&env, Some("bound")).await;
    for _ in 1..FINISHED {
        start(&env, None).await;
    }
    env.settle().await;
    env.clock.advance(Duration::days(11));
    start(&env, None).await; // its command never runs
    session(&env, "young").await;
    env
}

async fn one_run(kind: Kind, crash: &[(&'static str, String)]) -> Result<(), String> {
    let env = aged(kind).await;
    jadpo_test_env::housekeep_crashed_then_again(&env, crash).await?;
    let count = |sql: &'static str| env.count("main", sql);
    let runs = count("SELECT count(*) AS n FROM workflow_executions").await;
    let unfinished =
        count("SELECT count(*) AS n FROM workflow_executions WHERE status = 'running'").await;
    let orphans = count(
        "SELECT (SELECT count(*) FROM workflow_events e WHERE NOT EXISTS (SELECT 1 FROM \
         workflow_executions x WHERE x.run_id = e.run_id)) + (SELECT count(*) FROM \
         outbox_commands c WHERE NOT EXISTS (SELECT 1 FROM workflow_executions x WHERE x.run_id \
         = c.run_id)) + (SELECT count(*) FROM jadpo_command_dispatch d WHERE NOT EXISTS (SELECT \
         1 FROM workflow_executions x WHERE x.run_id = d.run_id)) AS n",
    )
    .await;
    let broken = count(
        "SELECT count(*) AS n FROM sessions s WHERE s.active_run_id IS NOT NULL AND NOT EXISTS \
         (SELECT 1 FROM workflow_executions x WHERE x.run_id = s.active_run_id)",
    )
    .await;
    let sessions = count("SELECT count(*) AS n FROM sessions").await;
    // Left: the unfinished run; the young Session, and the one unbound by its run's deletion
    // (changed then, so not idle yet).
    match (runs, unfinished, orphans, broken, sessions) {
        (1, 1, 0, 0, 2) => Ok(()),
        other => Err(format!(
            "(runs, unfinished, orphan rows, broken bindings, sessions) = {other:?}, expected \
             (1, 1, 0, 0, 2)"
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_finishes_whatever_crashes_and_touches_nothing_live() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        let run =
            |kind, crash: Vec<(&'static str, String)>| async move { one_run(kind, &crash).await };
        jadpo_test_env::crash_sets(kind, &mut rng, POINTS, RANDOM, "lost or left behind", run).await
    })
    .await;
}
