//! A crash at every step boundary of commit, relay and delivery, one at a time: afterwards
//! nothing acknowledged is lost and no subscriber effect is repeated.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_core::model::delivery::{DeliveryFilter, DeliveryStatus};
use jadpo_engine::commit::{CommitRequest, commit_unsent, request_digest};
use jadpo_engine::relay::enqueue_now;
use jadpo_test_env::{Env, Kind};
use serde_json::json;

const POINTS: &[&str] = jadpo_test_env::PIPELINE_FAULT_POINTS;

fn request() -> CommitRequest {
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]});
    CommitRequest {
        action: "place_order".to_owned(),
        request_digest: request_digest("POST", "/actions/place_order", &body),
        input: body,
        caller: "client".to_owned(),
        principal: None,
        idempotency_key: Some("order-1".to_owned()),
        traceparent: None,
        tracestate: None,
        request_id: "r".to_owned(),
    }
}

/// A client that retries with its idempotency key until it gets an answer.
async fn client(env: &Env, seen: &mut Vec<String>) -> serde_json::Value {
    for _ in 0..3 {
        match commit_unsent(&env.engine, request()).await {
            Ok(outcome) => {
                // For the relay's points, lose the immediate send so the sweep does the work.
                if !seen.is_empty() || !fail_is_on("relay.") {
                    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
                }
                return outcome.body;
            }
            Err(e) => seen.push(e.to_string()),
        }
    }
    panic!("the client never got an answer: {seen:?}");
}

fn fail_is_on(prefix: &str) -> bool {
    fail::list().iter().any(|(name, _)| name.starts_with(prefix))
}

async fn crash_at(kind: Kind, point: &str) {
    let mut env = Env::shop(kind).await;
    fail::cfg(point, "1*return").unwrap_or_else(|e| panic!("{e}"));
    let mut seen = Vec::new();
    let body = client(&env, &mut seen).await;
    seen.extend(env.settle().await);
    fail::remove(point);
    seen.extend(env.settle().await);
    assert!(
        seen.iter().any(|e| e.contains(point)),
        "{kind:?} {point}: the fault never fired ({seen:?})"
    );
    assert!(body["order_id"].is_string(), "{kind:?} {point}: {body}");
    let orders = env.count("main", "SELECT count(*) AS n FROM shop_orders").await;
    assert_eq!(orders, 1, "{kind:?} {point}: acknowledged orders");
    let reservations = env.count("warehouse", "SELECT count(*) AS n FROM shop_reservations").await;
    assert_eq!(reservations, 2, "{kind:?} {point}: subscriber effects");
    let all = DeliveryFilter { limit: 10, ..DeliveryFilter::default() };
    let deliveries =
        env.store("main").deliveries_list(&all).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deliveries.len(), 2, "{kind:?} {point}");
    assert!(
        deliveries.iter().all(|d| d.status == DeliveryStatus::Handled),
        "{kind:?} {point}: {deliveries:?}"
    );
    let receipt =
        deliveries.iter().find(|d| d.subscriber == "send_receipt").map(|d| format!("{}.0", d.id));
    let mailed = env.sinks.received("mailer");
    assert!(!mailed.is_empty(), "{kind:?} {point}: the receipt was never sent");
    assert!(
        mailed.iter().all(|m| m["idempotency_key"].as_str() == receipt.as_deref()),
        "{kind:?} {point}: every mail carries its step's key (the delivery id and the step's place): {mailed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_step_loses_nothing_and_repeats_nothing() {
    let scenario = fail::FailScenario::setup();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        for point in POINTS {
            crash_at(kind, point).await;
        }
    }
    scenario.teardown();
}
