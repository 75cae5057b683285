//! A crash at every boundary of a schedule tick — after its lease is taken, before and after the
//! run's commit, and in the relay that sends the run's delivery — alone and in random sets, on
//! both adapters. However it crashes, once the next tick has come (past the lease a crash held)
//! and the relay has resent: the schedule goes on (the next tick is recorded), every run recorded took
//! effect exactly once (one summary each) and every delivery ends handled. A tick missed while a
//! crash held the schedule is recorded as skipped: the shop's schedule catches up none.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use std::time::{Duration as StdDuration, Instant};

use chrono::Duration;
use jadpo_engine::EngineSettings;
use jadpo_engine::relay::relay;
use jadpo_engine::schedule::tick;
use jadpo_test_env::{Env, Kind, fails_after, t0};

const POINTS: &[&str] = &[
    "tick.after_lease",
    "tick.before_commit",
    "tick.after_commit",
    "relay.after_claim",
    "relay.after_send",
];

/// Random sets per adapter, after each point alone.
const RANDOM: usize = 60;

/// Minutes between runs: a run and its recovery stay inside them.
const SPACING: i64 = 5;

/// Delivers and relays, 15 s at a time, until no delivery is left unfinished (at most two
/// minutes): unlike `Env::settle`, it does not move the clock past the next ticks.
async fn settle(env: &mut Env) {
    for _ in 0..8 {
        env.drain().await;
        env.clock.advance(Duration::seconds(15));
        let _ = relay(&env.engine, Instant::now() + StdDuration::from_secs(5)).await;
        env.drain().await;
        if count(env, UNFINISHED).await == 0 {
            return;
        }
    }
}

const UNFINISHED: &str = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";

async fn count(env: &Env, sql: &str) -> i64 {
    env.count("main", sql).await
}

async fn one_run(
    env: &mut Env,
    minute: i64,
    crash: &[(&'static str, String)],
) -> Result<(), String> {
    env.clock.set(t0() + Duration::minutes(minute) + Duration::seconds(1));
    for (point, when) in crash {
        fail::cfg(*point, when.as_str()).map_err(|e| e.to_string())?;
    }
    let _ = tick(&env.engine, "tick-a").await;
    settle(env).await;
    for (point, _) in crash {
        fail::remove(point);
    }
    // The next tick, past any lease the crash left (60 s), from another owner.
    env.clock.set(t0() + Duration::minutes(minute + 2) + Duration::seconds(11));
    tick(&env.engine, "tick-b").await.map_err(|e| format!("the next tick failed: {e}"))?;
    settle(env).await;
    let next = t0() + Duration::minutes(minute + 2);
    let id = format!("sales_summary@{}", next.format("%Y-%m-%dT%H:%M:%S%.3fZ"));
    // Run, or skipped for a reason it records (the previous run still had deliveries out).
    let recorded = "SELECT count(*) AS n FROM jadpo_schedule_runs WHERE id = $1";
    let rows = env.store("main").query_once(recorded, &[id.as_str().into()]).await;
    let n = rows.map_err(|e| e.to_string())?.first().map_or(Ok(0), |r| r.get_i64("n"));
    if n.map_err(|e| e.to_string())? != 1 {
        return Err(format!("lost: the schedule stopped; tick {id} was not recorded"));
    }
    let runs =
        count(env, "SELECT count(*) AS n FROM jadpo_schedule_runs WHERE status = 'run'").await;
    let summaries = count(env, "SELECT count(*) AS n FROM shop_sales_summaries").await;
    if runs != summaries {
        return Err(format!("{runs} runs recorded but {summaries} summaries written"));
    }
    match count(env, UNFINISHED).await {
        0 => Ok(()),
        k => Err(format!("lost: {k} deliveries unfinished")),
    }
}

async fn adapter(kind: Kind, rng: &mut fastrand::Rng) -> Vec<String> {
    let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
    // A sent, unfinished delivery is presumed lost after a minute, not fifteen.
    let settings = EngineSettings {
        redelivery_after: StdDuration::from_secs(60),
        ..EngineSettings::default()
    };
    let mut env = Env::new(kind, app, settings).await;
    env.clock.set(t0() + Duration::seconds(10));
    tick(&env.engine, "tick-a").await.unwrap_or_else(|e| panic!("{e}")); // stores the schedule
    let alone =
        POINTS.iter().map(|p| jadpo_test_env::alone(p, &fails_after(0), "tick.after_commit"));
    let random = (0..jadpo_test_env::sized(RANDOM)).map(|_| {
        let chosen: Vec<_> = POINTS.iter().filter(|_| rng.u8(..10) < 3).collect();
        chosen.into_iter().map(|p| (*p, fails_after(rng.usize(..2)))).collect::<Vec<_>>()
    });
    let (mut failures, mut runs) = (Vec::new(), 0);
    for (n, crash) in alone.chain(random).enumerate() {
        runs += 1;
        let minute = SPACING * i64::try_from(n).unwrap_or(0) + 1;
        if let Err(e) = one_run(&mut env, minute, &crash).await {
            failures.push(format!("{kind:?} tick {minute} at {crash:?}: {e}"));
        }
    }
    let summaries = count(&env, "SELECT count(*) AS n FROM shop_sales_summaries").await;
    println!(
        "{kind:?}: {runs} runs, {} lost or repeated; {summaries} runs, one summary each",
        failures.len()
    );
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tick_runs_once_whatever_crashes() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        adapter(kind, &mut rng).await
    })
    .await;
}
