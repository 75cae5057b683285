//! The shop's `mailer` circuit breaker end to end on both adapters: failures open it, the next
//! receipt is held instead of attempted, and after the pause one probe closes it and the held
//! deliveries go out.

use chrono::Duration;
use jadpo_core::model::breaker::State;
use jadpo_core::model::delivery::{DeliveryFilter, DeliveryStatus};
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::Dispatched;
use jadpo_test_env::{Env, Kind, commit_and_enqueue, request};
use serde_json::json;

async fn place_order(env: &Env, n: usize) {
    let body = json!({"customer": format!("c{n}"), "items": [{"sku": "A", "qty": 1}]});
    commit_and_enqueue(env, request("place_order", body)).await;
}

const HELD: &str = "SELECT count(*) AS n FROM jadpo_deliveries WHERE held_connection = 'mailer'";

async fn a_failing_mailer_opens_its_breaker_and_a_probe_closes_it(kind: Kind) {
    let mut env = Env::shop(kind).await;
    env.sinks.set_failing("mailer", true);
    for n in 0..5 {
        place_order(&env, n).await;
    }
    let results = env.drain().await;
    let retrying = results
        .iter()
        .filter(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Retrying))))
        .count();
    assert_eq!(retrying, 5, "five receipts failed: {results:?}");
    let main = std::sync::Arc::clone(env.store("main"));
    let breakers = main.breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breakers.first().map(|b| (b.state, b.failures)), Some((State::Open, 5)));

    place_order(&env, 5).await;
    let results = env.drain().await;
    assert!(
        results.iter().any(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Held)))),
        "{results:?}"
    );
    assert_eq!(env.count("main", HELD).await, 1);
    let filter =
        DeliveryFilter { subscriber: Some("send_receipt".into()), limit: 10, status: None };
    let unattempted = "SELECT count(*) AS n FROM jadpo_deliveries \
        WHERE held_connection = 'mailer' AND attempts = 0 AND held_at IS NOT NULL";
    assert_eq!(env.count("main", unattempted).await, 1, "a held delivery is not attempted");
    assert_eq!(env.sinks.received("mailer").len(), 0);

    env.sinks.set_failing("mailer", false);
    env.clock.advance(Duration::seconds(31));
    let errors = env.settle().await;
    assert!(errors.is_empty(), "{errors:?}");
    let breakers = main.breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breakers.first().map(|b| b.state), Some(State::Closed));
    assert_eq!(env.count("main", HELD).await, 0);
    let all = main.deliveries_list(&filter).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!all.is_empty() && all.iter().all(|d| d.status == DeliveryStatus::Handled), "{all:?}");
    assert_eq!(env.sinks.received("mailer").len(), 6, "each receipt mailed once");
}

mod sqlite {
    #[tokio::test]
    async fn a_failing_mailer_opens_its_breaker_and_a_probe_closes_it() {
        super::a_failing_mailer_opens_its_breaker_and_a_probe_closes_it(super::Kind::Sqlite).await;
    }
}

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_mailer_opens_its_breaker_and_a_probe_closes_it() {
        super::a_failing_mailer_opens_its_breaker_and_a_probe_closes_it(super::Kind::Postgres)
            .await;
    }
}
