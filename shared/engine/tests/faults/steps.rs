//! Step records end to end on both adapters, through the shop's `take_payment` subscriber (charge
//! through `payments`, then mail a receipt through `mailer`, then write `shop_payments`): answered
//! calls replay, a changed request stops the run, an unanswered call past the provider's key
//! window is not re-sent, a runner that lost its lease records and mails nothing, a call that
//! cannot finish before the deadline is not started, and no transaction is open during a call.
//!
//! Fault points are process-wide: each test holds `fail`'s scenario lock (`both!(faults: …)`),
//! which runs them one at a time.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration as StdDuration, Instant};

use chrono::Duration;
use jadpo_core::Clock;
use jadpo_core::model::delivery::DeliveryStatus;
use jadpo_core::model::step::StepRecordView;
use jadpo_engine::Engine;
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::{Dispatched, dispatch};
use jadpo_engine::operate::Operator;
use jadpo_engine::operate::deliveries::DeliveryOps;
use jadpo_engine::relay::enqueue_now;
use jadpo_test_env::{Env, Kind, both, request};
use serde_json::{Value, json};

/// Places an order (its own deliveries left unsent) and asks to pay it; the payment's delivery
/// is on the queue. Returns the order id and the payment delivery's id.
async fn pay(env: &Env) -> (String, String) {
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
    let placed = commit_unsent(&env.engine, request("place_order", body)).await;
    let order =
        placed.unwrap_or_else(|e| panic!("{e}")).body["order_id"].as_str().map(str::to_owned);
    let order = order.unwrap_or_else(|| panic!("no order id"));
    let paid = commit_unsent(
        &env.engine,
        request("pay_order", json!({"order_id": order, "amount": 1250})),
    );
    let paid = paid.await.unwrap_or_else(|e| panic!("{e}"));
    enqueue_now(&env.engine, &paid.store, &paid.deliveries).await;
    let delivery = paid.deliveries.first().map(|d| d.id.clone());
    (order, delivery.unwrap_or_else(|| panic!("no payment delivery")))
}

/// Requests to sink `name` whose body has `field` = `value` (for `mailer`, the payment
/// receipts only: the order's own receipt goes there too).
fn sent_to(env: &Env, name: &str, field: &str, value: &str) -> Vec<Value> {
    let all = env.sinks.received(name);
    let payment = |m: &Value| name != "mailer" || m["body"]["charge_id"].is_string();
    all.into_iter().filter(|m| m["body"][field].as_str() == Some(value) && payment(m)).collect()
}

async fn record(env: &Env, run: &str) -> StepRecordView {
    let found = env.store("main").step_run_get(run).await.unwrap_or_else(|e| panic!("{e}"));
    found.unwrap_or_else(|| panic!("no step record for {run}"))
}

async fn status(env: &Env, delivery: &str) -> (DeliveryStatus, Option<String>) {
    let found = env.store("main").delivery_get(delivery).await.unwrap_or_else(|e| panic!("{e}"));
    let d = found.unwrap_or_else(|| panic!("no delivery {delivery}"));
    (d.status, d.last_failure)
}

async fn payments(env: &Env) -> i64 {
    env.count("main", "SELECT count(*) AS n FROM shop_payments").await
}

/// The payment's queue message, taken off the in-process queue.
fn message(env: &mut Env) -> String {
    let taken = env.rx.try_recv().map(|m| m.body);
    taken.unwrap_or_else(|e| panic!("no message on the queue: {e}"))
}

fn fault(point: &str, action: &str) {
    fail::cfg(point, action).unwrap_or_else(|e| panic!("{e}"));
}

/// The first runner on the [`elsewhere`] thread to reach a fault point, held there until
/// released; every other passes. Unlike `1*pause`, the hold cannot land on another runner that
/// gets there first (the test's own dispatch, when the runner it meant to stall is slow to get
/// its answer under load), and the test can wait until the runner it meant is held.
struct Hold {
    point: &'static str,
    state: Arc<(Mutex<(bool, bool)>, Condvar)>,
}

impl Hold {
    fn first_at(point: &'static str) -> Self {
        let state = Arc::new((Mutex::new((false, false)), Condvar::new()));
        let shared = Arc::clone(&state);
        let callback = move || {
            if std::thread::current().name() != Some(ELSEWHERE) {
                return;
            }
            let (lock, wake) = &*shared;
            let mut held = lock.lock().unwrap_or_else(|e| e.into_inner());
            if held.0 {
                return;
            }
            held.0 = true;
            wake.notify_all();
            while !held.1 {
                held = wake.wait(held).unwrap_or_else(|e| e.into_inner());
            }
        };
        fail::cfg_callback(point, callback).unwrap_or_else(|e| panic!("{e}"));
        Self { point, state }
    }

    /// Whether the runner is held there (or was).
    fn reached(&self) -> bool {
        self.state.0.lock().map(|held| held.0).unwrap_or(false)
    }

    /// Lets the held runner go on, and removes the point.
    fn release(&self) {
        fail::remove(self.point);
        let (lock, wake) = &*self.state;
        lock.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        wake.notify_all();
    }
}

impl Drop for Hold {
    /// A test that fails before releasing still lets its held runner go.
    fn drop(&mut self) {
        self.release();
    }
}

/// The name of the thread [`elsewhere`] runs a runner on.
const ELSEWHERE: &str = "elsewhere";

/// An operator's `jadpo deliveries retry`, as its error text.
async fn operator_retry(env: &Env, delivery: &str) -> Result<(), String> {
    let tess = Operator::new("tess").map_err(|e| e.to_string())?;
    let ops = DeliveryOps::new(&env.engine, &tess);
    ops.retry(delivery).await.map(|_| ()).map_err(|e| e.to_string())
}

/// Dispatches `body` on a thread and runtime of its own, as another function instance would:
/// a paused fault point there blocks that thread only, never a worker the sink server needs.
fn elsewhere(engine: Engine, body: String) -> std::thread::JoinHandle<Result<Dispatched, String>> {
    let spawned = std::thread::Builder::new().name(ELSEWHERE.to_owned()).spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let runtime = runtime.unwrap_or_else(|e| panic!("{e}"));
        runtime.block_on(dispatch(&engine, &body)).map_err(|e| e.to_string())
    });
    spawned.unwrap_or_else(|e| panic!("{e}"))
}

fn joined(
    handle: std::thread::JoinHandle<Result<Dispatched, String>>,
) -> Result<Dispatched, String> {
    handle.join().unwrap_or_else(|_| Err("the runner panicked".to_owned()))
}

/// Runs the queued deliveries with `point` failing once.
async fn first_attempt_fails_at(env: &mut Env, point: &str) {
    fault(point, "1*return");
    env.drain().await;
    fail::remove(point);
}

/// Waits (in real time) until `what` holds.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + StdDuration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
}

/// A commit that fails after both calls were answered is retried without calling again: both
/// answers replay from their sealed records, and each call went out under its own key.
async fn a_retry_replays_answered_calls(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (order, delivery) = pay(&env).await;
    first_attempt_fails_at(&mut env, "deliver.before_subscriber_commit").await;
    assert_eq!(payments(&env).await, 0, "the first attempt committed nothing");
    let errors = env.settle().await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(status(&env, &delivery).await.0, DeliveryStatus::Handled);
    let charges = sent_to(&env, "payments", "order_id", &order);
    let receipts = sent_to(&env, "mailer", "order_id", &order);
    assert_eq!((charges.len(), receipts.len()), (1, 1), "replayed, not called again");
    assert_eq!(charges[0]["idempotency_key"], json!(format!("{delivery}.0")));
    assert_eq!(receipts[0]["idempotency_key"], json!(format!("{delivery}.1")));
    let sql = "SELECT count(*) AS n FROM shop_payments WHERE charge_id LIKE 'payments-%' \
               AND receipt_id LIKE 'mailer-%'";
    assert_eq!(env.count("main", sql).await, 1);
    let run = record(&env, &delivery).await;
    assert!(run.finished_at.is_some() && !run.diverged, "{run:?}");
    assert_eq!(run.step_shape, r#"["payments:/charges","mailer:/receipts"]"#);
    assert_eq!(run.steps.len(), 2, "{run:?}");
    assert!(run.steps.iter().all(|s| s.sealed_answer.is_some() && s.fingerprint.is_some()));
    let sealed = run.steps[0].sealed_answer.as_ref().map(|(bytes, _)| bytes.clone());
    let plain = serde_json::to_vec(&charges[0]["body"]).unwrap_or_default();
    assert!(
        sealed.is_some_and(|s| !s.windows(8).any(|w| plain.windows(8).any(|p| p == w))),
        "the stored answer is sealed, not plain"
    );
}

/// A retry that asks a recorded step for another request stops the run as diverged: nothing is
/// sent under the old key, nothing is written, and the delivery is dead with the reason.
async fn a_changed_request_stops_the_run_as_diverged(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (order, delivery) = pay(&env).await;
    first_attempt_fails_at(&mut env, "deliver.before_subscriber_commit").await;
    // As if a new build asked the second step for another receipt.
    let changed = "UPDATE jadpo_steps SET request_fingerprint = 'another' WHERE step_no = 1";
    let main = env.store("main");
    main.execute_once(changed, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    env.settle().await;
    let (state, failure) = status(&env, &delivery).await;
    assert_eq!(state, DeliveryStatus::Dead, "{failure:?}");
    assert!(failure.as_deref().is_some_and(|f| f.contains("diverged")), "{failure:?}");
    let run = record(&env, &delivery).await;
    assert!(run.diverged && run.finished_at.is_none(), "{run:?}");
    assert!(run.divergence.as_deref().is_some_and(|d| d.contains("step 1")), "{run:?}");
    assert_eq!(sent_to(&env, "mailer", "order_id", &order).len(), 1, "no new request sent");
    assert_eq!(payments(&env).await, 0);
    let refused = operator_retry(&env, &delivery).await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("diverged")), "{refused:?}");
}

/// A charge sent but never answered is re-sent under its key within the provider's key window,
/// and refused once the window has passed: the provider may have forgotten the key.
async fn an_unanswered_call_past_its_key_window_is_not_resent(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (order, delivery) = pay(&env).await;
    first_attempt_fails_at(&mut env, "steps.after_call").await;
    assert_eq!(sent_to(&env, "payments", "order_id", &order).len(), 1);
    env.clock.advance(Duration::hours(25));
    env.settle().await;
    let (state, failure) = status(&env, &delivery).await;
    assert_eq!(state, DeliveryStatus::Dead, "{failure:?}");
    assert!(failure.as_deref().is_some_and(|f| f.contains("key window")), "{failure:?}");
    assert_eq!(sent_to(&env, "payments", "order_id", &order).len(), 1, "not re-sent");
    assert_eq!(payments(&env).await, 0);
    let refused = operator_retry(&env, &delivery).await;
    assert!(refused.as_ref().is_err_and(|e| e.contains("key window")), "{refused:?}");
    assert_eq!(
        status(&env, &delivery).await.0,
        DeliveryStatus::Dead,
        "the refusal changed nothing"
    );

    // Within the window the same unanswered charge is re-sent, under the same key.
    let (order, delivery) = pay(&env).await;
    first_attempt_fails_at(&mut env, "steps.after_call").await;
    env.clock.advance(Duration::hours(23));
    env.settle().await;
    assert_eq!(status(&env, &delivery).await.0, DeliveryStatus::Handled);
    let charges = sent_to(&env, "payments", "order_id", &order);
    assert_eq!(charges.len(), 2, "{charges:?}");
    assert_eq!(charges[0]["idempotency_key"], charges[1]["idempotency_key"]);
}

/// A runner stalled after its call loses the run once its lease expires: the next attempt
/// re-sends the call under the same key and finishes; the stalled one, resumed, records no
/// answer, makes no further call and commits nothing.
async fn a_runner_that_lost_its_lease_records_and_sends_nothing(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (order, delivery) = pay(&env).await;
    let body = message(&mut env);
    let hold = Hold::first_at("steps.after_call");
    let stalled = elsewhere(env.another_process(), body.clone());
    until("the stalled runner has charged and is held", || hold.reached()).await;
    assert_eq!(sent_to(&env, "payments", "order_id", &order).len(), 1, "it charged once");
    env.clock.advance(Duration::seconds(121));
    let second = dispatch(&env.engine, &body).await;
    assert!(
        matches!(second, Ok(Dispatched::Delivery(DeliveryResult::Handled))),
        "the next attempt took the run over: {second:?} {:?}",
        status(&env, &delivery).await
    );
    hold.release();
    let first = joined(stalled);
    assert!(
        !matches!(first, Ok(Dispatched::Delivery(DeliveryResult::Handled))),
        "the stalled runner must not finish: {first:?}"
    );
    assert_eq!(sent_to(&env, "mailer", "order_id", &order).len(), 1, "one receipt");
    let charges = sent_to(&env, "payments", "order_id", &order);
    assert_eq!(charges.len(), 2);
    assert_eq!(charges[0], charges[1], "the same request under the same key");
    assert_eq!(payments(&env).await, 1);
    assert_eq!(status(&env, &delivery).await.0, DeliveryStatus::Handled);
}

/// With a deadline, a call that could not finish before it is not started; a run left by a
/// function stalled at its deadline is taken over as soon as the deadline passes, not after the
/// full lease.
async fn a_deadline_starts_no_late_call_and_ends_the_lease(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (order, delivery) = pay(&env).await;
    let mut late = env.engine.clone();
    late.runs.deadline = Some(env.clock.now() + Duration::seconds(5));
    let body = message(&mut env);
    let refused = dispatch(&late, &body).await;
    assert!(matches!(refused, Ok(Dispatched::Delivery(DeliveryResult::Retrying))), "{refused:?}");
    assert!(sent_to(&env, "payments", "order_id", &order).is_empty(), "no call started");
    let failure = status(&env, &delivery).await.1;
    assert!(failure.as_deref().is_some_and(|f| f.contains("deadline")), "{failure:?}");

    let (order, _) = pay(&env).await;
    let body = message(&mut env);
    let again = body.clone();
    let mut timed = env.another_process();
    timed.runs.deadline = Some(env.clock.now() + Duration::seconds(60));
    let hold = Hold::first_at("steps.after_call");
    let stalled = elsewhere(timed, body);
    until("the timed runner has charged and is held", || hold.reached()).await;
    assert_eq!(sent_to(&env, "payments", "order_id", &order).len(), 1, "it charged once");
    env.clock.advance(Duration::seconds(61));
    let taken = dispatch(&env.engine, &again).await;
    hold.release();
    let _ = joined(stalled);
    assert!(
        matches!(taken, Ok(Dispatched::Delivery(DeliveryResult::Handled))),
        "taken over once the deadline passed: {taken:?}"
    );
}

/// While a call hangs, no transaction of the run is open: another writer commits at once (on
/// PostgreSQL no session of the database is idle in a transaction).
async fn no_transaction_is_open_during_a_call(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (order, _) = pay(&env).await;
    let body = message(&mut env);
    fault("steps.after_call", "1*pause");
    let hanging = elsewhere(env.another_process(), body);
    until("the call is under way", || sent_to(&env, "payments", "order_id", &order).len() == 1)
        .await;
    let main = env.store("main");
    let started = Instant::now();
    let write = "INSERT INTO shop_sales_summaries (run_id, tick_at, orders, computed_at) \
                 VALUES ('other-writer', $1, 0, $2)";
    let now = env.clock.now();
    let written = main.execute_once(write, &[now.into(), now.into()]).await;
    let waited = started.elapsed();
    let open = match kind {
        Kind::Postgres => {
            let sql = "SELECT count(*) AS n FROM pg_stat_activity \
                       WHERE datname = current_database() AND state LIKE 'idle in transaction%'";
            env.count("main", sql).await
        }
        Kind::Sqlite => 0,
    };
    fail::remove("steps.after_call");
    let _ = joined(hanging);
    assert!(written.is_ok(), "another writer was blocked: {written:?}");
    assert!(waited < StdDuration::from_secs(2), "another writer waited {waited:?}");
    assert_eq!(open, 0, "a transaction was open during the call");
}

/// A run another runner holds (a crashed one whose lease has not ended, say) is not attempted:
/// its delivery waits until the lease ends with its attempts unchanged, however often its message
/// comes back meanwhile (more often than the subscriber has attempts), then takes effect once.
async fn a_run_held_by_another_runner_defers_its_delivery_without_an_attempt(kind: Kind) {
    use jadpo_core::model::delivery::QueuedDelivery;
    use jadpo_core::model::step::{RunGrant, RunStart, StepMode};
    let mut env = Env::shop(kind).await;
    let (_, delivery) = pay(&env).await;
    let now = env.clock.now();
    let held_until = now + Duration::minutes(1);
    let start = RunStart {
        run_key: &delivery,
        action: "take_payment",
        build: "another",
        mode: StepMode::Recorded,
        now,
        lease_until: held_until,
    };
    let grant = env.store("main").step_run_acquire(&start).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(grant, RunGrant::Acquired { .. }), "{grant:?}");
    let again = [QueuedDelivery { id: delivery.clone(), traceparent: None }];
    for round in 0..12 {
        if round > 0 {
            env.clock.advance(Duration::seconds(4));
            enqueue_now(&env.engine, "main", &again).await;
        }
        let results = env.drain().await;
        assert!(
            results.iter().all(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Retrying)))),
            "{kind:?} round {round}: {results:?}"
        );
        let found =
            env.store("main").delivery_get(&delivery).await.unwrap_or_else(|e| panic!("{e}"));
        let d = found.unwrap_or_else(|| panic!("no delivery {delivery}"));
        assert_eq!((d.status, d.attempts), (DeliveryStatus::Pending, 0), "{kind:?} round {round}");
        assert_eq!(d.next_attempt_at, held_until, "{kind:?}: due again when the lease ends");
        let failure = d.last_failure.unwrap_or_default();
        assert!(failure.contains("another runner holds this run"), "{kind:?}: {failure}");
    }
    assert_eq!(payments(&env).await, 0, "{kind:?}: charged while another runner held the run");
    env.clock.set(held_until + Duration::seconds(1));
    env.settle().await;
    assert_eq!(status(&env, &delivery).await.0, DeliveryStatus::Handled, "{kind:?}");
    assert_eq!(payments(&env).await, 1, "{kind:?}: charged once after the lease ended");
}

both!(
    faults:
    a_run_held_by_another_runner_defers_its_delivery_without_an_attempt,
    a_retry_replays_answered_calls,
    a_changed_request_stops_the_run_as_diverged,
    an_unanswered_call_past_its_key_window_is_not_resent,
    a_runner_that_lost_its_lease_records_and_sends_nothing,
    a_deadline_starts_no_late_call_and_ends_the_lease,
    no_transaction_is_open_during_a_call,
);
