//! A crash at every boundary of a keyed-state advance — after the claim, before and after the
//! commit of the state with its event, and in the relay that sends the event's delivery — alone
//! and in random sets, on both adapters. A poll-like loop claims `poll/rates`, advances its
//! counter by one and emits one event per advance. However it crashes, once the crashed claim's
//! lease has run out another owner claims and advances: the counter equals the events emitted,
//! each event comes from its own version (nothing emitted twice, nothing written without its
//! event), the loop always goes on, and every delivery ends handled.

use std::time::Duration as StdDuration;

use chrono::Duration;
use jadpo_application::Emitted;
use jadpo_engine::EngineSettings;
use jadpo_engine::services::state::{self, Advanced};
use jadpo_test_env::{Env, Kind, fails_after};
use serde_json::json;

use crate::state_app::{app, emitted};

const POINTS: &[&str] = &[
    "state.after_claim",
    "state.before_commit",
    "state.after_commit",
    "relay.after_claim",
    "relay.after_send",
];

/// Random sets per adapter, after each point alone.
const RANDOM: usize = 1000;

const TTL: StdDuration = StdDuration::from_secs(30);

/// One round as `owner`: claim, read the counter, advance it by one with its event, release.
/// `Ok(false)` when the row was held by another.
async fn round(env: &Env, owner: &str) -> Result<bool, String> {
    let engine = &env.engine;
    let claimed = state::claim(engine, "main", "poll", "rates", owner, TTL);
    let Some(claim) = claimed.await.map_err(|e| e.to_string())? else { return Ok(false) };
    let n = state::value(&claim).map_err(|e| e.to_string())?.and_then(|v| v["n"].as_i64());
    let next = n.unwrap_or(0) + 1;
    let event = [Emitted { event_type: "rates.changed".into(), payload: json!({"n": next}) }];
    let value = json!({"n": next});
    let advanced = state::advance(engine, "main", &claim, &value, &event, "poll:rates").await;
    match advanced.map_err(|e| e.to_string())? {
        Advanced::Written { claim, .. } => {
            state::release(engine, "main", &claim).await.map_err(|e| e.to_string())?;
            Ok(true)
        }
        other => Err(format!("a live claim's advance came to {other:?}")),
    }
}

async fn counter(env: &Env) -> Result<i64, String> {
    let row = env.store("main").state_get("poll", "rates").await.map_err(|e| e.to_string())?;
    let value = row.and_then(|r| r.value).unwrap_or_else(|| r#"{"n":0}"#.to_owned());
    let value: serde_json::Value = serde_json::from_str(&value).map_err(|e| e.to_string())?;
    value["n"].as_i64().ok_or_else(|| format!("no counter in {value}"))
}

async fn one_run(env: &mut Env, crash: &[(&'static str, String)]) -> Result<(), String> {
    let before = counter(env).await?;
    for (point, when) in crash {
        fail::cfg(*point, when.as_str()).map_err(|e| e.to_string())?;
    }
    let _ = round(env, "crashing").await;
    let _ = env.settle().await;
    for (point, _) in crash {
        fail::remove(point);
    }
    // Past any lease the crash left, another owner goes on.
    env.clock.advance(Duration::seconds(31));
    if !round(env, "next").await? {
        return Err("the next owner could not claim the row".into());
    }
    let errors = env.settle().await;
    let after = counter(env).await?;
    let (events, versions) = emitted(env).await;
    if after <= before {
        return Err(format!("lost: the counter stayed at {after}"));
    }
    if events != after || versions != after {
        return Err(format!("counter {after}, but {events} events from {versions} versions"));
    }
    let unfinished = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    match env.count("main", unfinished).await {
        0 => Ok(()),
        k => Err(format!("lost: {k} deliveries unfinished ({errors:?})")),
    }
}

async fn adapter(kind: Kind, rng: &mut fastrand::Rng) -> Vec<String> {
    let settings = EngineSettings {
        redelivery_after: StdDuration::from_secs(60),
        ..EngineSettings::default()
    };
    let mut env = Env::new(kind, app(), settings).await;
    let alone =
        POINTS.iter().map(|p| jadpo_test_env::alone(p, &fails_after(0), "state.after_commit"));
    let random = (0..jadpo_test_env::sized(RANDOM)).map(|_| {
        let chosen: Vec<_> = POINTS.iter().filter(|_| rng.u8(..10) < 3).collect();
        chosen.into_iter().map(|p| (*p, fails_after(0))).collect::<Vec<_>>()
    });
    let (mut failures, mut runs) = (Vec::new(), 0);
    for crash in alone.chain(random) {
        runs += 1;
        if let Err(e) = one_run(&mut env, &crash).await {
            failures.push(format!("{kind:?} run {runs} at {crash:?}: {e}"));
        }
    }
    let n = counter(&env).await.unwrap_or(-1);
    println!(
        "{kind:?}: {runs} runs, {} lost or repeated; counter {n}, one event each",
        failures.len()
    );
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_state_survives_a_crash_at_any_boundary() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        adapter(kind, &mut rng).await
    })
    .await;
}
