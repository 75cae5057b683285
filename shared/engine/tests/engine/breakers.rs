//! The shop's `mailer` circuit breaker end to end on both adapters: failures open it, the next
//! receipt is held instead of attempted, and after the pause one probe closes it and the held
//! deliveries go out; and on PostgreSQL, a closed breaker lets a delivery through and takes
//! its success without the row's lock, while a failure still waits for it. A breaker this
//! process last saw closed is trusted for a moment (no read): one opened by another process
//! holds this one's deliveries once the moment has passed, at once with no trust, and at once
//! after a failure of this process's own.

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

/// Opens `mailer`'s breaker in `main` as another process would: its row written, this process
/// told nothing.
async fn open_elsewhere(env: &Env) {
    use jadpo_core::model::breaker::plus;
    let main = env.store("main");
    let now = jadpo_core::Clock::now(env.clock.as_ref());
    let mut tx = main.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let mut breaker = main.breaker_lock(tx.as_mut(), "mailer", now).await;
    let breaker = breaker.as_mut().unwrap_or_else(|e| panic!("{e}"));
    breaker.state = State::Open;
    breaker.failures = 5;
    breaker.opened_at = Some(now);
    breaker.pause_ms = 30_000;
    breaker.reopen_at = Some(plus(now, 30_000));
    let written = main.breaker_write(tx.as_mut(), breaker, now).await;
    written.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
}

/// Places order `n` and delivers it: whether its receipt was held, and how many receipts the
/// mailer has received in all.
async fn receipt(env: &mut Env, n: usize) -> (bool, usize) {
    place_order(env, n).await;
    let results = env.drain().await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let held = results.iter().any(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Held))));
    (held, env.sinks.received("mailer").len())
}

async fn env_trusting(kind: Kind, trusted_for: std::time::Duration) -> Env {
    let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
    let settings = jadpo_engine::EngineSettings {
        breaker_trusted_for: trusted_for,
        ..jadpo_engine::EngineSettings::default()
    };
    Env::new(kind, app, settings).await
}

async fn a_breaker_seen_closed_is_trusted_for_a_moment(kind: Kind) {
    let mut env = env_trusting(kind, std::time::Duration::from_secs(1)).await;
    assert_eq!(receipt(&mut env, 0).await, (false, 1), "the row made under its lock");
    assert_eq!(receipt(&mut env, 1).await, (false, 2), "passed on the row read, noted");
    open_elsewhere(&env).await;
    assert_eq!(receipt(&mut env, 2).await, (false, 3), "trusted closed within the moment");
    env.clock.advance(Duration::milliseconds(1001));
    assert_eq!(receipt(&mut env, 3).await, (true, 3), "read again once the moment passed");
    assert_eq!(env.count("main", HELD).await, 1);
}

async fn without_trust_every_delivery_reads_its_breaker(kind: Kind) {
    let mut env = env_trusting(kind, std::time::Duration::ZERO).await;
    assert_eq!(receipt(&mut env, 0).await, (false, 1));
    assert_eq!(receipt(&mut env, 1).await, (false, 2));
    open_elsewhere(&env).await;
    assert_eq!(receipt(&mut env, 2).await, (true, 2), "held with no moment of trust");
}

async fn a_failure_here_forgets_the_breaker_seen_closed(kind: Kind) {
    let mut env = env_trusting(kind, std::time::Duration::from_secs(60)).await;
    assert_eq!(receipt(&mut env, 0).await, (false, 1));
    assert_eq!(receipt(&mut env, 1).await, (false, 2));
    env.sinks.set_failing("mailer", true);
    place_order(&env, 2).await;
    let results = env.drain().await;
    let failed =
        results.iter().any(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Retrying))));
    assert!(failed, "the receipt failed: {results:?}");
    env.sinks.set_failing("mailer", false);
    open_elsewhere(&env).await;
    assert!(receipt(&mut env, 3).await.0, "read at once after this process's own failure");
}

/// Places an order and delivers what it emits, then asks to pay it; the payment's delivery id,
/// queued.
async fn pay(env: &mut Env) -> String {
    use jadpo_engine::commit::commit_unsent;
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
    let placed = commit_unsent(&env.engine, request("place_order", body)).await;
    let placed = placed.unwrap_or_else(|e| panic!("{e}"));
    jadpo_engine::relay::enqueue_now(&env.engine, &placed.store, &placed.deliveries).await;
    let delivered = env.drain().await;
    assert!(delivered.iter().all(Result::is_ok), "{delivered:?}");
    let order = placed.body["order_id"].clone();
    let paid =
        commit_unsent(&env.engine, request("pay_order", json!({"order_id": order, "amount": 9})));
    let paid = paid.await.unwrap_or_else(|e| panic!("{e}"));
    jadpo_engine::relay::enqueue_now(&env.engine, &paid.store, &paid.deliveries).await;
    paid.deliveries.first().map(|d| d.id.clone()).unwrap_or_else(|| panic!("no delivery"))
}

/// The payment receipts the mailer received (the order's own receipt goes there too).
fn receipts(env: &Env) -> usize {
    env.sinks.received("mailer").iter().filter(|m| m["body"]["charge_id"].is_string()).count()
}

/// Failures (by connection) on `main`'s breakers.
async fn failures(env: &Env) -> Vec<(String, u32)> {
    let breakers = env.store("main").breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
    breakers.into_iter().map(|b| (b.connection, b.failures)).collect()
}

/// `take_payment` is declared with `payments` and also calls `mailer`: the mailer's failure is
/// counted on the mailer's breaker, not on the payments one; an open mailer breaker holds the
/// delivery at its mailer call (the charge replayed, not sent again), and the mailer's probe
/// then closes it and the payment completes once.
async fn each_call_meets_the_breaker_of_its_connection(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let delivery = pay(&mut env).await;
    env.sinks.set_failing("mailer", true);
    let results = env.drain().await;
    assert!(
        matches!(results.as_slice(), [Ok(Dispatched::Delivery(DeliveryResult::Retrying))]),
        "{results:?}"
    );
    let counted = failures(&env).await;
    assert!(counted.contains(&("mailer".to_owned(), 1)), "the mailer's failure: {counted:?}");
    assert!(counted.contains(&("payments".to_owned(), 0)), "payments answered: {counted:?}");
    env.sinks.set_failing("mailer", false);
    env.clock.advance(Duration::minutes(10));
    open_elsewhere(&env).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let swept = jadpo_engine::relay::relay(&env.engine, deadline).await;
    assert_eq!(swept.map(|r| r.sent).ok(), Some(1), "the retry is due");
    let results = env.drain().await;
    assert!(
        matches!(results.as_slice(), [Ok(Dispatched::Delivery(DeliveryResult::Held))]),
        "held by the open mailer breaker: {results:?}"
    );
    let held = "SELECT count(*) AS n FROM jadpo_deliveries WHERE held_connection = 'mailer' \
        AND id = $1";
    assert_eq!(jadpo_test_env::count_where(&env, "main", held, &delivery).await, Ok(1));
    assert_eq!(receipts(&env), 0, "nothing reached the open mailer");
    assert_eq!(env.sinks.received("payments").len(), 1, "charged once, replayed since");
    let errors = env.settle().await;
    assert!(errors.is_empty(), "{errors:?}");
    let breakers = env.store("main").breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(breakers.iter().all(|b| b.state == State::Closed), "{breakers:?}");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM shop_payments").await, 1);
    assert_eq!(env.sinks.received("payments").len(), 1, "charged once");
    assert_eq!(receipts(&env), 1, "the payment's receipt mailed once");
    // Each answered call's sealed answer is written in the form its encoding names.
    let answered = "SELECT count(*) AS n FROM jadpo_steps WHERE sealed_answer IS NOT NULL";
    let sealed =
        format!("{answered} AND encoding = {}", jadpo_core::model::encoding::SEALED_JSON.number);
    let n = env.count("main", answered).await;
    assert!(n >= 2 && env.count("main", &sealed).await == n, "{n} answered calls");
}

mod sqlite {
    #[tokio::test]
    async fn each_call_meets_the_breaker_of_its_connection() {
        super::each_call_meets_the_breaker_of_its_connection(super::Kind::Sqlite).await;
    }

    #[tokio::test]
    async fn a_breaker_seen_closed_is_trusted_for_a_moment() {
        super::a_breaker_seen_closed_is_trusted_for_a_moment(super::Kind::Sqlite).await;
    }

    #[tokio::test]
    async fn without_trust_every_delivery_reads_its_breaker() {
        super::without_trust_every_delivery_reads_its_breaker(super::Kind::Sqlite).await;
    }

    #[tokio::test]
    async fn a_failure_here_forgets_the_breaker_seen_closed() {
        super::a_failure_here_forgets_the_breaker_seen_closed(super::Kind::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_success_is_settled_on_the_row_its_pass_read() {
        super::a_success_is_settled_on_the_row_its_pass_read(super::Kind::Sqlite).await;
    }

    #[tokio::test]
    async fn a_failing_mailer_opens_its_breaker_and_a_probe_closes_it() {
        super::a_failing_mailer_opens_its_breaker_and_a_probe_closes_it(super::Kind::Sqlite).await;
    }
}

/// While another transaction holds `mailer`'s breaker row locked, a closed breaker's pass and a
/// success go through (they change nothing), and a failure waits for the lock, then counts.
async fn a_closed_breaker_passes_without_its_lock() {
    use jadpo_core::model::breaker::{AttemptResult, BreakerPolicy, Gate, Transition};
    use jadpo_engine::breaker::{admit, settle};
    let env = Env::shop(Kind::Postgres).await;
    let main = env.store("main");
    let policy = BreakerPolicy::default();
    let now = jadpo_core::Clock::now(env.clock.as_ref());
    // The row exists (created closed by a first, locked, admit).
    let first = admit(main.as_ref(), "mailer", "d0", now, &policy).await;
    assert_eq!(first.ok().map(|(gate, _)| gate), Some(Gate::Pass));
    let mut holder = main.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let held = main.breaker_lock(holder.as_mut(), "mailer", now).await;
    assert_eq!(held.map(|b| b.state).ok(), Some(State::Closed));
    let soon = std::time::Duration::from_secs(2);
    let passed = tokio::time::timeout(soon, admit(main.as_ref(), "mailer", "d1", now, &policy));
    let passed = passed.await.ok().and_then(Result::ok).map(|(gate, _)| gate);
    assert_eq!(passed, Some(Gate::Pass), "waited for the lock");
    let success =
        settle(main.as_ref(), ("mailer", "d1"), AttemptResult::Success, None, now, &policy);
    let settled = tokio::time::timeout(soon, success).await.ok().and_then(Result::ok);
    assert_eq!(settled, Some((Transition::None, 0)), "a success waited for the lock");
    let store = std::sync::Arc::clone(main);
    let failure = tokio::spawn(async move {
        let failed = AttemptResult::ConnectionFailed;
        settle(store.as_ref(), ("mailer", "d2"), failed, None, now, &policy).await.map(|(t, _)| t)
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!failure.is_finished(), "a failure changed the row without its lock");
    holder.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    let counted = failure.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counted.ok(), Some(Transition::None), "one failure does not open it");
    let breakers = main.breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breakers.first().map(|b| b.failures), Some(1), "the failure was counted");
}

/// A success after a pass decided on the row read without a lock is settled on that row, with
/// no second read: a failure committed meanwhile is ordered after it and stays counted; a
/// success after a pass made under the lock (no row handed over) is settled on the row as it is
/// now, and clears the count.
async fn a_success_is_settled_on_the_row_its_pass_read(kind: Kind) {
    use jadpo_core::model::breaker::{AttemptResult, BreakerPolicy, Transition};
    use jadpo_engine::breaker::{admit, settle};
    let env = Env::shop(kind).await;
    let main = env.store("main");
    let policy = BreakerPolicy::default();
    let now = jadpo_core::Clock::now(env.clock.as_ref());
    let failures = || async {
        let breakers = main.breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
        breakers.first().map(|b| b.failures)
    };
    let created = admit(main.as_ref(), "mailer", "d0", now, &policy).await;
    assert_eq!(created.ok().map(|(_, seen)| seen.is_none()), Some(true), "made under the lock");
    let (_, seen) =
        admit(main.as_ref(), "mailer", "d1", now, &policy).await.unwrap_or_else(|e| panic!("{e}"));
    let seen = seen.unwrap_or_else(|| panic!("a closed breaker's pass hands its row over"));
    let failed = AttemptResult::ConnectionFailed;
    let counted = settle(main.as_ref(), ("mailer", "d2"), failed, None, now, &policy).await;
    assert_eq!(counted.ok().map(|(t, _)| t), Some(Transition::None));
    let success = AttemptResult::Success;
    let settled = settle(main.as_ref(), ("mailer", "d1"), success, Some(&seen), now, &policy).await;
    assert_eq!(settled.ok(), Some((Transition::None, 0)));
    assert_eq!(failures().await, Some(1), "the failure meanwhile is ordered after the success");
    let settled = settle(main.as_ref(), ("mailer", "d3"), success, None, now, &policy).await;
    assert_eq!(settled.ok(), Some((Transition::None, 0)));
    assert_eq!(failures().await, Some(0), "a success read afresh clears the count");
}

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_call_meets_the_breaker_of_its_connection() {
        super::each_call_meets_the_breaker_of_its_connection(super::Kind::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_breaker_seen_closed_is_trusted_for_a_moment() {
        super::a_breaker_seen_closed_is_trusted_for_a_moment(super::Kind::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_trust_every_delivery_reads_its_breaker() {
        super::without_trust_every_delivery_reads_its_breaker(super::Kind::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failure_here_forgets_the_breaker_seen_closed() {
        super::a_failure_here_forgets_the_breaker_seen_closed(super::Kind::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_success_is_settled_on_the_row_its_pass_read() {
        super::a_success_is_settled_on_the_row_its_pass_read(super::Kind::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_breaker_passes_without_its_lock() {
        super::a_closed_breaker_passes_without_its_lock().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_mailer_opens_its_breaker_and_a_probe_closes_it() {
        super::a_failing_mailer_opens_its_breaker_and_a_probe_closes_it(super::Kind::Postgres)
            .await;
    }
}
