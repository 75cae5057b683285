//! Leases and duplicate messages, exercised through the use cases rather than the store alone: a
//! lease holder paused mid-pass whose lease another takes writes nothing afterwards (a schedule
//! tick, a housekeeping pass, a workflow command), and two copies of one message delivered at the
//! same time have one effect, the second stopped by the handled-delivery record.
//!
//! A pause is a fault point configured with a callback: the pass that reaches it waits while the
//! callback runs the other party to completion on the same runtime. Fault points are
//! process-wide, so the cases take turns ([`POINTS`]).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Duration;
use jadpo_core::Clock;
use jadpo_core::model::housekeeping::LEASE_KEY;
use jadpo_core::model::lease::LeaseTable;
use jadpo_core::model::message::Pointer;
use jadpo_engine::commit::{CommitRequest, commit_unsent, request_digest};
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::{DispatchError, Dispatched, dispatch};
use jadpo_engine::housekeeping::{HousekeepingSettings, housekeep};
use jadpo_engine::schedule::tick;
use jadpo_engine::workflow::runs::{CommandError, CommandResult, cancel_run, find_run, start_run};
use jadpo_test_env::{Env, Kind, commit_and_enqueue, request, t0};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::json;

/// One case at a time holds the process-wide fault points.
static POINTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The first time `point` is reached, runs `other` to completion while the pass that reached it
/// waits; returns whether it ran. `point` is switched off again by [`Armed`]'s drop.
fn meanwhile<F, Fut>(point: &'static str, other: F) -> Armed
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    let handle = tokio::runtime::Handle::current();
    let fired = Arc::new(AtomicBool::new(false));
    let once = Arc::clone(&fired);
    fail::cfg_callback(point, move || {
        if !once.swap(true, Ordering::SeqCst) {
            tokio::task::block_in_place(|| handle.block_on(other()));
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    Armed { point, fired }
}

/// An armed pause point.
struct Armed {
    point: &'static str,
    fired: Arc<AtomicBool>,
}

impl Armed {
    fn assert_fired(&self) {
        assert!(self.fired.load(Ordering::SeqCst), "the pass never reached {}", self.point);
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        fail::remove(self.point);
    }
}

async fn a_tick_that_lost_its_lease_records_nothing(kind: Kind) {
    let _turn = POINTS.lock().await;
    let env = Env::shop(kind).await;
    env.clock.set(t0() + Duration::seconds(10));
    tick(&env.engine, "setup").await.unwrap_or_else(|e| panic!("{e}"));
    env.clock.set(t0() + Duration::seconds(61)); // sales_summary is due
    let store = Arc::clone(env.store(env.engine.app.schedule_store()));
    let clock = Arc::clone(&env.clock);
    let armed = meanwhile("tick.after_lease", move || {
        let (store, clock) = (Arc::clone(&store), Arc::clone(&clock));
        async move {
            clock.advance(Duration::seconds(61)); // past the first holder's 60 s lease
            let now = clock.now();
            let taken = store
                .lease_take(LeaseTable::Schedules, "sales_summary", "b", now, Duration::minutes(1))
                .await;
            assert!(matches!(taken, Ok(Some(_))), "another pass takes the lease: {taken:?}");
        }
    });
    let report = tick(&env.engine, "a").await.unwrap_or_else(|e| panic!("{e}"));
    armed.assert_fired();
    assert_eq!(report.lost, ["sales_summary"], "{kind:?}: {report:?}");
    assert!(report.runs.is_empty() && report.skipped.is_empty(), "{kind:?}: {report:?}");
    let runs = env.count("main", "SELECT count(*) AS n FROM jadpo_schedule_runs").await;
    assert_eq!(runs, 0, "{kind:?}: the paused pass recorded a run after losing its lease");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_outbox").await, 0, "{kind:?}");
}

fn keyed_order(key: &str) -> CommitRequest {
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
    CommitRequest {
        idempotency_key: Some(key.to_owned()),
        request_digest: request_digest("POST", "/actions/place_order", &body),
        ..request("place_order", body)
    }
}

async fn a_housekeeper_that_lost_its_lease_deletes_nothing(kind: Kind) {
    let _turn = POINTS.lock().await;
    let env = Env::shop(kind).await;
    for i in 0..3 {
        commit_unsent(&env.engine, keyed_order(&format!("order-{i}")))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    env.clock.advance(Duration::days(2)); // every idempotency key has expired
    let keys = "SELECT count(*) AS n FROM jadpo_idempotency_keys";
    assert_eq!(env.count("main", keys).await, 3);
    let store = Arc::clone(env.store("main"));
    let (other, clock) = (Arc::clone(&store), Arc::clone(&env.clock));
    let armed = meanwhile("housekeeping.before_batch", move || {
        let (store, clock) = (Arc::clone(&other), Arc::clone(&clock));
        async move {
            clock.advance(Duration::seconds(301)); // past the first holder's 5 min lease
            let now = clock.now();
            let taken = store
                .lease_take(LeaseTable::Housekeeping, LEASE_KEY, "b", now, Duration::minutes(5))
                .await;
            assert!(matches!(taken, Ok(Some(_))), "another pass takes the lease: {taken:?}");
        }
    });
    let settings = HousekeepingSettings::default();
    let rescue_after = std::time::Duration::from_secs(900);
    let report = housekeep(store.as_ref(), env.clock.as_ref(), &settings, rescue_after, &[], "a")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    armed.assert_fired();
    let stopped = report.stopped.clone().unwrap_or_default();
    assert!(stopped.contains("lease was lost"), "{kind:?}: {report:?}");
    assert_eq!(report.total_deleted(), 0, "{kind:?}: {report:?}");
    assert_eq!(env.count("main", keys).await, 3, "{kind:?}: deleted after losing the lease");
    let completed =
        "SELECT count(*) AS n FROM jadpo_housekeeping WHERE last_completed_at IS NOT NULL";
    assert_eq!(env.count("main", completed).await, 0, "{kind:?}: completed without the lease");
}

async fn a_command_whose_run_lease_was_taken_commits_nothing(kind: Kind) {
    let _turn = POINTS.lock().await;
    let mut env = Env::shop(kind).await;
    let started = start_run(&env.engine, "checkout", json!({"order_id": "o-7"}), None, None).await;
    let run = started.unwrap_or_else(|e| panic!("{e}")).run_id;
    let reserve = env.rx.try_recv().unwrap_or_else(|e| panic!("the reserve command: {e}"));
    let (store_name, before) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    let pending = "SELECT count(*) AS n FROM outbox_commands WHERE status = 'pending'";
    let pending_before = env.count(&store_name, pending).await;
    let store = Arc::clone(env.store(&store_name));
    let (clock, run_id) = (Arc::clone(&env.clock), run.clone());
    let armed = meanwhile("command.before_result_commit", move || {
        let (store, clock, run_id) = (Arc::clone(&store), Arc::clone(&clock), run_id.clone());
        async move {
            clock.advance(Duration::seconds(61)); // past the executor's 60 s lease
            let now = clock.now().timestamp_millis();
            let taken = store.run_lease_take(&run_id, "b", now, now + 60_000).await;
            assert!(matches!(taken, Ok(Some(_))), "another executor takes the lease: {taken:?}");
        }
    });
    let result = dispatch(&env.engine, &reserve.body).await;
    armed.assert_fired();
    assert!(
        matches!(result, Err(DispatchError::Command(CommandError::Busy(_)))),
        "{kind:?}: {result:?}"
    );
    let (_, after) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        after.revision, before.revision,
        "{kind:?}: a transition committed without the lease"
    );
    assert_eq!(env.count(&store_name, pending).await, pending_before, "{kind:?}");
}

/// The executor decides a command's result on the run as it read it before taking the lease; a
/// run that moved meanwhile (here a cancellation) is read again and the result committed on it,
/// ending the lease in the same transaction.
async fn a_command_whose_run_moved_meanwhile_commits_on_the_moved_run(kind: Kind) {
    let _turn = POINTS.lock().await;
    let mut env = Env::shop(kind).await;
    let started = start_run(&env.engine, "checkout", json!({"order_id": "o-8"}), None, None).await;
    let run = started.unwrap_or_else(|e| panic!("{e}")).run_id;
    let reserve = env.rx.try_recv().unwrap_or_else(|e| panic!("the reserve command: {e}"));
    let (engine, run_id) = (env.engine.clone(), run.clone());
    let cancelled = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&cancelled);
    let armed = meanwhile("command.before_result_commit", move || {
        let (engine, run_id, seen) = (engine.clone(), run_id.clone(), Arc::clone(&seen));
        async move {
            let state = cancel_run(&engine, &run_id, "changed my mind", None).await;
            *seen.lock().unwrap_or_else(|e| panic!("{e}")) = Some(state.map(|s| s.revision));
        }
    });
    let result = dispatch(&env.engine, &reserve.body).await;
    armed.assert_fired();
    assert!(
        matches!(result, Ok(Dispatched::Command(CommandResult::Committed))),
        "{kind:?}: {result:?}"
    );
    let cancel_revision = cancelled.lock().unwrap_or_else(|e| panic!("{e}")).take();
    let cancel_revision = cancel_revision.and_then(Result::ok);
    let cancel_revision = cancel_revision.unwrap_or_else(|| panic!("{kind:?}: the cancel failed"));
    let (store_name, after) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(after.revision > cancel_revision, "{kind:?}: the result was not committed on top");
    let leases = "SELECT count(*) AS n FROM execution_leases";
    assert_eq!(env.count(&store_name, leases).await, 0, "{kind:?}: the lease outlived the result");
    env.drain().await;
    let (_, done) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.status, ExecutionStatus::Cancelled, "{kind:?}");
}

async fn two_copies_of_one_message_at_once_have_one_effect(kind: Kind) {
    let _turn = POINTS.lock().await;
    let mut env = Env::shop(kind).await;
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 3}]});
    commit_and_enqueue(&env, request("place_order", body)).await;
    let mut reserve = None;
    while let Ok(message) = env.rx.try_recv() {
        let Ok(Pointer::Delivery { store, delivery_id }) = Pointer::parse(&message.body) else {
            panic!("not a delivery: {}", message.body);
        };
        let delivery = env.store(&store).delivery_get(&delivery_id).await;
        let delivery = delivery.ok().flatten().unwrap_or_else(|| panic!("{}", message.body));
        if delivery.subscriber == "reserve_stock" {
            reserve = Some(message);
        }
    }
    let reserve = reserve.unwrap_or_else(|| panic!("no message for reserve_stock"));
    let other_result = Arc::new(Mutex::new(None));
    let (engine, copy, seen) =
        (env.engine.clone(), reserve.body.clone(), Arc::clone(&other_result));
    let armed = meanwhile("deliver.after_load", move || {
        let (engine, copy, seen) = (engine.clone(), copy.clone(), Arc::clone(&seen));
        async move {
            let result = dispatch(&engine, &copy).await.map_err(|e| e.to_string());
            *seen.lock().unwrap_or_else(|e| panic!("{e}")) = Some(result);
        }
    });
    let first = dispatch(&env.engine, &reserve.body).await.map_err(|e| e.to_string());
    armed.assert_fired();
    let second = other_result.lock().unwrap_or_else(|e| panic!("{e}")).take();
    assert_eq!(
        second,
        Some(Ok(Dispatched::Delivery(DeliveryResult::Handled))),
        "{kind:?}: the copy that ran first"
    );
    assert_eq!(
        first,
        Ok(Dispatched::Delivery(DeliveryResult::AlreadyHandled)),
        "{kind:?}: the copy that loaded first"
    );
    let units = "SELECT CAST(coalesce(sum(qty), 0) AS BIGINT) AS n FROM shop_reservations";
    assert_eq!(env.count("warehouse", units).await, 3, "{kind:?}: the reservation was repeated");
}

jadpo_test_env::both!(
    faults:
    a_tick_that_lost_its_lease_records_nothing,
    a_housekeeper_that_lost_its_lease_deletes_nothing,
    a_command_whose_run_lease_was_taken_commits_nothing,
    a_command_whose_run_moved_meanwhile_commits_on_the_moved_run,
    two_copies_of_one_message_at_once_have_one_effect,
);
