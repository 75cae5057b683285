//! A crash at every boundary of housekeeping's batches — before a batch, before and after its
//! commit, at any of its first batches — alone and in random sets, on both adapters, over a store
//! holding finished work past its retention and an order still in flight. However it crashes,
//! once the crashed pass's lease has run out and the next pass has run: everything past its
//! retention is gone, nothing in flight or of the application's was touched, and the next pass
//! fails for nothing.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use chrono::Duration;
use jadpo_engine::EngineSettings;
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::housekeeping::HousekeepingSettings;
use jadpo_test_env::{Env, Kind, commit_and_enqueue, request};
use serde_json::json;

const POINTS: &[&str] = &[
    "housekeeping.before_batch",
    "housekeeping.before_batch_commit",
    "housekeeping.after_batch_commit",
];

/// Runs per adapter, after each point alone.
const RANDOM: usize = 30;

const ORDERS: usize = 12;

fn order() -> serde_json::Value {
    json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]})
}

/// A store with `ORDERS` orders delivered two weeks ago and one just placed, undelivered.
async fn aged(kind: Kind) -> Env {
    let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
    let d = EngineSettings::default();
    // Small batches, so that a pass is many of them.
    let housekeeping = HousekeepingSettings { batch_size: 4, ..d.housekeeping };
    let mut env = Env::new(kind, app, EngineSettings { housekeeping, ..d }).await;
    for _ in 0..ORDERS {
        commit_and_enqueue(&env, request("place_order", order())).await;
    }
    env.settle().await;
    env.clock.advance(Duration::days(15));
    commit_unsent(&env.engine, request("place_order", order()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    env
}

async fn one_run(kind: Kind, crash: &[(&'static str, String)]) -> Result<(), String> {
    let env = aged(kind).await;
    jadpo_test_env::housekeep_crashed_then_again(&env, crash).await?;
    let count = |sql: &'static str| env.count("main", sql);
    let finished =
        count("SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'handled'").await;
    let pending =
        count("SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'pending'").await;
    let orders = count("SELECT count(*) AS n FROM shop_orders").await;
    let handled_main = count("SELECT count(*) AS n FROM jadpo_handled_deliveries").await;
    match (finished, pending, orders, handled_main) {
        (0, 2, o, 0) if o == ORDERS as i64 + 1 => Ok(()),
        other => Err(format!(
            "(finished deliveries, pending deliveries, orders, handled records) = {other:?}, \
             expected (0, 2, {}, 0)",
            ORDERS + 1
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn housekeeping_finishes_whatever_crashes_and_touches_nothing_live() {
    jadpo_test_env::crash_loop_on_both(POINTS, |kind, mut rng| async move {
        let run =
            |kind, crash: Vec<(&'static str, String)>| async move { one_run(kind, &crash).await };
        jadpo_test_env::crash_sets(
            kind,
            &mut rng,
            POINTS,
            RANDOM,
            "left behind or touched too much",
            run,
        )
        .await
    })
    .await;
}
