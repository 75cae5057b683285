//! The clock jumping under a running pipeline, on both adapters: an hour back in the middle of a
//! burst (as a host whose clock was corrected does), then a month forward (as a host resumed
//! from a long pause does), with housekeeping running after each. No order is lost or repeated,
//! a retried request still replays its answer across the backward jump, every delivery ends
//! handled once, and housekeeping deletes only what its retention allows.

use jadpo_engine::commit::{CommitRequest, commit_unsent};
use jadpo_engine::housekeeping::housekeep_all;
use jadpo_engine::relay::enqueue_now;
use jadpo_test_env::{Env, Kind, request};
use serde_json::json;

fn order(n: usize) -> CommitRequest {
    let mut asked = request(
        "place_order",
        json!({"customer": format!("c{n}"), "items": [{"sku": "A", "qty": 1}]}),
    );
    asked.idempotency_key = Some(format!("order-{n}"));
    asked
}

async fn place(env: &Env, n: usize) -> serde_json::Value {
    let outcome =
        commit_unsent(&env.engine, order(n)).await.unwrap_or_else(|e| panic!("order {n}: {e}"));
    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    outcome.body
}

async fn housekeep(env: &Env, kind: Kind) {
    let (_, failures) = housekeep_all(&env.engine, "hk").await;
    assert!(failures.is_empty(), "{kind:?}: {failures:?}");
}

async fn the_clock_jumps_back_then_forward(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let mut answers = Vec::new();
    for n in 0..5 {
        answers.push(place(&env, n).await);
    }
    env.drain().await;

    // An hour back: new orders, and a retry of an earlier one that replays its answer.
    env.clock.advance(chrono::Duration::hours(-1));
    for n in 5..10 {
        answers.push(place(&env, n).await);
    }
    let retried = commit_unsent(&env.engine, order(2)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(retried.body, answers[2], "{kind:?}: the retry across the jump was not replayed");
    housekeep(&env, kind).await;
    env.settle().await;
    let orders = "SELECT count(*) AS n FROM shop_orders";
    assert_eq!(env.count("main", orders).await, 10, "{kind:?}");
    let pending = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    assert_eq!(env.count("main", pending).await, 0, "{kind:?}: a delivery was left");

    // A month forward, with one more order in flight: housekeeping deletes what has aged out,
    // never the new order's unfinished deliveries.
    env.clock.advance(chrono::Duration::days(30));
    let _ = commit_unsent(&env.engine, order(10)).await.unwrap_or_else(|e| panic!("{e}"));
    housekeep(&env, kind).await;
    let live = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'pending'";
    assert_eq!(env.count("main", live).await, 2, "{kind:?}: housekeeping took a live delivery");
    env.settle().await;
    assert_eq!(env.count("main", pending).await, 0, "{kind:?}");
    let reserved = "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations";
    assert_eq!(env.count("warehouse", reserved).await, 11, "{kind:?}: lost or repeated");
    let mailed = env.sinks.received("mailer");
    let keys: std::collections::BTreeSet<_> =
        mailed.iter().filter_map(|m| m["idempotency_key"].as_str()).collect();
    assert_eq!(keys.len(), 11, "{kind:?}: one receipt per order");
    println!(
        "{kind:?}: 11 orders across an hour back and a month forward; reserved 11, receipts under \
         {} keys, lost 0, repeated 0",
        keys.len()
    );
}

jadpo_test_env::both!(the_clock_jumps_back_then_forward);
