//! Conformance cases for schedules and housekeeping: the tick pass, operator actions and the
//! housekeeping pass, run end to end over the adapter with injected time (nothing sleeps).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use jadpo_application::{
    Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::model::delivery::Outcome;
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_core::model::lease::LeaseTable;
use jadpo_core::model::operator::ActionFilter;
use jadpo_core::ports::NoConnections;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};
use jadpo_core::{Clock, ManualClock, SqlValue, Store};
use jadpo_engine::housekeeping::{HousekeepingSettings, housekeep};
use jadpo_engine::operate::{NoOperator, Operator};
use jadpo_engine::schedule::{ScheduleOpError, ScheduleOps, tick};
use jadpo_engine::{Engine, EngineSettings};
use jadpo_schedule::{NewRun, Schedule};

use crate::Fixture;
use crate::cases::{migrated, ok};

const EVERY_MINUTE: &str = "every_minute";

pub(crate) fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default()
}

/// A queue that keeps what it was sent.
#[derive(Default)]
pub(crate) struct Kept(Mutex<Vec<QueueMessage>>);

#[async_trait]
impl Queue for Kept {
    fn max_batch(&self) -> usize {
        10
    }

    async fn send_batch(&self, messages: &[QueueMessage]) -> Result<SendReport, QueueError> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend_from_slice(messages);
        Ok(SendReport::default())
    }
}

struct Noop;

#[async_trait]
impl Subscriber for Noop {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        Ok(())
    }
}

pub(crate) fn app(store: &str, schedules: Vec<Schedule>) -> Arc<Application> {
    let mut b = Application::builder("conformance").store(store).event("report.due").subscriber(
        "summarize",
        "report.due",
        store,
        RetryPolicy::default(),
        Noop,
    );
    for s in schedules {
        b = b.schedule(s);
    }
    Arc::new(ok(b.build(), "application"))
}

fn every_minute() -> Schedule {
    Schedule::every(EVERY_MINUTE, std::time::Duration::from_secs(60), "report.due")
}

pub(crate) fn engine_on(
    store: Arc<dyn Store>,
    app: Arc<Application>,
    clock: Arc<ManualClock>,
) -> Engine {
    Engine {
        app,
        stores: [(store.name().to_owned(), store)].into_iter().collect(),
        queue: Arc::new(Kept::default()),
        clock,
        connections: Arc::new(NoConnections),
        settings: EngineSettings::default(),
        runs: jadpo_engine::steps::RunEnv::ephemeral(),
        blobs: None,
        breakers_seen: Default::default(),
        key_sets: Default::default(),
    }
}

pub(crate) async fn count(store: &dyn Store, sql: &str, params: &[SqlValue]) -> i64 {
    let rows = ok(store.query_once(sql, params).await, sql);
    ok(rows.first().map_or(Ok(-1), |r| r.get_i64("n")), "count")
}

async fn runs(store: &dyn Store, status: &str) -> i64 {
    let sql = "SELECT COUNT(*) AS n FROM jadpo_schedule_runs WHERE status = $1";
    count(store, sql, &[status.into()]).await
}

/// A started pipeline whose schedule was stored by a first pass at t0 + 10 s (first due t0 + 60 s).
async fn started(fx: &dyn Fixture, schedules: Vec<Schedule>) -> (Engine, Arc<ManualClock>) {
    let store = migrated(fx).await;
    let clock = Arc::new(ManualClock::new(t0() + Duration::seconds(10)));
    let engine = engine_on(Arc::clone(&store), app(store.name(), schedules), Arc::clone(&clock));
    let report = ok(tick(&engine, "first").await, "first tick");
    assert!(report.created >= 1 && report.runs.is_empty(), "{report:?}");
    (engine, clock)
}

fn store_of(engine: &Engine) -> Arc<dyn Store> {
    Arc::clone(ok(engine.store(engine.app.schedule_store()), "schedule store"))
}

/// Two tick passes at once, on two connections and two threads released together, record one
/// run for the tick (neither fails: the other is busy or finds it done), and its identity
/// refuses a second record of the same tick.
pub async fn two_ticks_at_once_record_one_run(fx: &dyn Fixture) {
    let (a, clock) = started(fx, vec![every_minute()]).await;
    let b = engine_on(fx.open(), Arc::clone(&a.app), Arc::clone(&clock));
    clock.set(t0() + Duration::seconds(61));
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let pass = |engine: Engine, owner: &'static str| {
        let barrier = Arc::clone(&barrier);
        tokio::spawn(async move {
            barrier.wait().await;
            tick(&engine, owner).await
        })
    };
    let (ra, rb) = (pass(a.clone(), "a"), pass(b, "b"));
    let (ra, rb) = (ok(ok(ra.await, "join a"), "tick a"), ok(ok(rb.await, "join b"), "tick b"));
    assert_eq!(ra.runs.len() + rb.runs.len(), 1, "{ra:?} {rb:?}");
    let store = store_of(&a);
    assert_eq!(runs(store.as_ref(), "run").await, 1);
    let outbox = "SELECT COUNT(*) AS n FROM jadpo_outbox WHERE source = $1";
    assert_eq!(count(store.as_ref(), outbox, &["schedule:every_minute".into()]).await, 1);
    let id = ra.runs.first().or(rb.runs.first()).cloned().unwrap_or_default();
    assert_eq!(id, "every_minute@2026-01-01T00:01:00.000Z");
    let mut tx = ok(store.begin().await, "begin");
    let again = NewRun {
        id: &id,
        schedule: EVERY_MINUTE,
        tick_at: t0() + Duration::seconds(60),
        skipped: None,
        trigger: "due",
        outbox_id: None,
    };
    let inserted = ok(store.schedule_run_insert(tx.as_mut(), &again, clock.now()).await, "insert");
    assert!(!inserted, "the same tick was recorded twice");
    ok(tx.rollback().await, "rollback");
}

/// A tick pass paused past its schedule lease's expiry loses it; the next pass records the run,
/// and the paused holder is fenced out of writing.
pub async fn a_paused_tick_is_fenced_out(fx: &dyn Fixture) {
    let (engine, clock) = started(fx, vec![every_minute()]).await;
    let store = store_of(&engine);
    clock.set(t0() + Duration::seconds(61));
    let ttl = Duration::seconds(30);
    let paused = ok(
        store.lease_take(LeaseTable::Schedules, EVERY_MINUTE, "paused", clock.now(), ttl).await,
        "take",
    );
    let paused = paused.unwrap_or_else(|| panic!("a free schedule lease was refused"));
    let busy = ok(tick(&engine, "other").await, "tick while held");
    assert_eq!((busy.busy.as_slice(), busy.runs.len()), ([EVERY_MINUTE.to_owned()].as_slice(), 0));
    clock.advance(Duration::seconds(31));
    let took_over = ok(tick(&engine, "other").await, "tick after expiry");
    assert_eq!(took_over.runs.len(), 1, "{took_over:?}");
    let mut tx = ok(store.begin().await, "begin");
    assert!(!ok(store.lease_fence(tx.as_mut(), &paused, clock.now()).await, "fence"));
    ok(tx.rollback().await, "rollback");
    assert_eq!(runs(store.as_ref(), "run").await, 1);
}

/// After a gap, the latest tick runs and the missed ones are recorded as skipped with a reason;
/// a schedule with catch-up 2 also runs the two missed ticks before the latest.
pub async fn missed_ticks_record_one_run_and_skipped_rows(fx: &dyn Fixture) {
    let catching_up =
        Schedule::every("catching_up", std::time::Duration::from_secs(60), "report.due")
            .catch_up(2);
    let (engine, clock) = started(fx, vec![every_minute(), catching_up]).await;
    let store = store_of(&engine);
    clock.set(t0() + Duration::seconds(5 * 60 + 30));
    let report = ok(tick(&engine, "t").await, "tick");
    let mine = |id: &String| id.starts_with("every_minute@");
    assert_eq!(
        report.runs.iter().filter(|id| mine(id)).collect::<Vec<_>>(),
        ["every_minute@2026-01-01T00:05:00.000Z"]
    );
    assert_eq!(report.runs.iter().filter(|id| !mine(id)).count(), 3, "{report:?}");
    let skipped: Vec<_> = report.skipped.iter().filter(|(id, _)| mine(id)).collect();
    assert_eq!(skipped.len(), 4, "{report:?}");
    assert!(skipped.iter().all(|(_, why)| why.starts_with("missed")), "{skipped:?}");
    let stored = ok(store.schedule_runs(Some(EVERY_MINUTE), 100).await, "runs");
    assert_eq!(stored.len(), 5);
    assert!(
        stored
            .iter()
            .filter(|r| r.status == "skipped")
            .all(|r| r.reason.as_deref().is_some_and(|w| w.starts_with("missed")))
    );
    let rows = ok(store.schedules_list().await, "list");
    let row = rows.iter().find(|r| r.name == EVERY_MINUTE).unwrap_or_else(|| panic!("row"));
    assert_eq!(row.next_due_at, t0() + Duration::seconds(6 * 60));
    let again = ok(tick(&engine, "t").await, "tick again");
    assert!(again.runs.is_empty() && again.skipped.is_empty(), "{again:?}");
}

/// A tick is skipped while the previous run's deliveries are unfinished, and runs once they are.
pub async fn overlapping_ticks_are_skipped(fx: &dyn Fixture) {
    let (engine, clock) = started(fx, vec![every_minute()]).await;
    let store = store_of(&engine);
    clock.set(t0() + Duration::seconds(61));
    assert_eq!(ok(tick(&engine, "t").await, "first run").runs.len(), 1);
    clock.set(t0() + Duration::seconds(121));
    let blocked = ok(tick(&engine, "t").await, "overlapping tick");
    assert!(blocked.runs.is_empty(), "{blocked:?}");
    assert_eq!(blocked.skipped.len(), 1, "the overlapping tick is recorded: {blocked:?}");
    assert!(blocked.skipped.iter().all(|(_, why)| why.starts_with("overlap")), "{blocked:?}");
    let pending = ok(
        store.query_once("SELECT id FROM jadpo_deliveries WHERE status = 'pending'", &[]).await,
        "pending",
    );
    for row in &pending {
        let id = ok(row.get_str("id"), "id");
        ok(store.delivery_record_outcome(id, &Outcome::Handled, clock.now()).await, "handled");
    }
    clock.set(t0() + Duration::seconds(181));
    assert_eq!(ok(tick(&engine, "t").await, "after the run finished").runs.len(), 1);
}

/// Pause, resume and trigger are recorded as operator actions with the operator's name, the
/// database role and the schedule's state then; refused operations record nothing.
pub async fn operator_actions_are_recorded(fx: &dyn Fixture) {
    let (engine, clock) = started(fx, vec![every_minute()]).await;
    let store = store_of(&engine);
    assert_eq!(Operator::new("  "), Err(NoOperator));
    let alice = ok(Operator::new("alice"), "operator");
    let ops = ScheduleOps::new(&engine, &alice);
    let paused = ok(ops.pause(EVERY_MINUTE).await, "pause");
    assert_eq!(paused.state(), "paused");
    assert!(matches!(ops.pause(EVERY_MINUTE).await, Err(ScheduleOpError::AlreadyPaused(_))));
    assert!(matches!(ops.pause("nope").await, Err(ScheduleOpError::Unknown(_))));
    clock.set(t0() + Duration::seconds(61));
    let skipped = ok(tick(&engine, "t").await, "paused tick");
    assert!(skipped.runs.is_empty());
    assert_eq!(skipped.skipped.len(), 1, "the paused tick is recorded: {skipped:?}");
    assert!(skipped.skipped.iter().all(|(_, why)| why.contains("paused")), "{skipped:?}");
    clock.advance(Duration::seconds(1));
    ok(ops.resume(EVERY_MINUTE).await, "resume");
    assert!(matches!(ops.resume(EVERY_MINUTE).await, Err(ScheduleOpError::NotPaused(_))));
    clock.advance(Duration::seconds(1));
    let run = ok(ops.trigger(EVERY_MINUTE).await, "trigger");
    assert!(run.starts_with("every_minute@operator@"), "{run}");
    let stored = ok(store.schedule_runs(Some(EVERY_MINUTE), 10).await, "runs");
    let by_operator =
        stored.iter().find(|r| r.id == run).unwrap_or_else(|| panic!("run {run} missing"));
    assert_eq!((by_operator.status.as_str(), by_operator.trigger.as_str()), ("run", "operator"));
    assert!(by_operator.outbox_id.is_some(), "an operator's run emits its event");
    let actions = ok(
        store
            .operator_actions(&ActionFilter {
                item_kind: Some("schedule".into()),
                item: Some(EVERY_MINUTE.into()),
                limit: 10,
                ..ActionFilter::default()
            })
            .await,
        "actions",
    );
    let names: Vec<_> = actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(names, ["schedule.trigger", "schedule.resume", "schedule.pause"]);
    for a in &actions {
        assert_eq!(a.operator, "alice");
        assert!(!a.db_role.is_empty());
        let state: serde_json::Value = ok(serde_json::from_str(&a.item_state), "state json");
        assert_eq!(state["name"], EVERY_MINUTE);
    }
    let pause_state: serde_json::Value = ok(serde_json::from_str(&actions[2].item_state), "json");
    assert_eq!(pause_state["state"], "active", "the state recorded is the state before the action");
    assert_eq!(actions[0].detail.as_deref(), Some(format!("run {run}").as_str()));
}

/// A schedule removed from the application stops (and cannot be triggered); declared again, it
/// comes back due at its next tick.
pub async fn removed_schedules_stop(fx: &dyn Fixture) {
    let (engine, clock) = started(fx, vec![every_minute()]).await;
    let store = store_of(&engine);
    let without = engine_on(Arc::clone(&store), app(store.name(), vec![]), Arc::clone(&clock));
    clock.set(t0() + Duration::seconds(61));
    let report = ok(tick(&without, "t").await, "tick without");
    assert_eq!((report.removed, report.runs.len()), (1, 0));
    let bob = ok(Operator::new("bob"), "operator");
    let ops = ScheduleOps::new(&engine, &bob);
    assert!(matches!(ops.trigger(EVERY_MINUTE).await, Err(ScheduleOpError::Removed(_))));
    assert_eq!(runs(store.as_ref(), "run").await, 0);
    clock.set(t0() + Duration::seconds(90));
    ok(tick(&engine, "t").await, "declared again");
    let rows = ok(store.schedules_list().await, "list");
    assert_eq!(
        rows.first().map(|r| (r.state(), r.next_due_at)),
        Some(("active", t0() + Duration::seconds(120)))
    );
    // A changed expression: the stored due time (t0 + 120 s) still fires; the next one follows
    // the new rate (t0 + 240 s, where the old one would have said t0 + 180 s).
    let slower = Schedule::every(EVERY_MINUTE, std::time::Duration::from_secs(120), "report.due");
    let changed =
        engine_on(Arc::clone(&store), app(store.name(), vec![slower]), Arc::clone(&clock));
    clock.set(t0() + Duration::seconds(121));
    let fired = ok(tick(&changed, "t").await, "tick after the change");
    assert_eq!(fired.runs, ["every_minute@2026-01-01T00:02:00.000Z"]);
    let rows = ok(store.schedules_list().await, "list");
    assert_eq!(
        rows.first().map(|r| (r.expression.as_str(), r.next_due_at)),
        Some(("every 120s", t0() + Duration::seconds(240)))
    );
}

pub(crate) fn hk_settings() -> HousekeepingSettings {
    HousekeepingSettings { batch_size: 2, ..HousekeepingSettings::default() }
}

pub(crate) async fn exec(store: &dyn Store, sql: &str, params: &[SqlValue]) {
    ok(store.execute_once(sql, params).await, sql);
}

pub(crate) type Seeded = (&'static str, &'static str, &'static str, Option<i64>, Option<i64>);

/// Seeds rows of every class around their retention at `now`.
pub(crate) async fn seed(store: &dyn Store, now: DateTime<Utc>) {
    let days = Duration::days;
    for (i, expires) in [-1, -1, -1, -1, -1, 3600, 3600].iter().enumerate() {
        let sql = "INSERT INTO jadpo_idempotency_keys (scope, key, request_digest, response_status, \
            response_body, created_at, expires_at) VALUES ('c', $1, 'd', 200, '{}', $2, $3)";
        exec(
            store,
            sql,
            &[
                format!("k{i}").into(),
                (now - days(2)).into(),
                (now + Duration::seconds(*expires)).into(),
            ],
        )
        .await;
    }
    for (i, age) in [15, 15, 15, 1].iter().enumerate() {
        let sql = "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) VALUES ($1, 's', $2)";
        exec(store, sql, &[format!("h{i}").into(), (now - days(*age)).into()]).await;
    }
    let outbox = "INSERT INTO jadpo_outbox (id, event_type, payload, chain_depth, source, created_at) \
        VALUES ($1, 'report.due', '{}', 0, 'seed', $2)";
    for (id, age) in
        [("e-old", 20), ("e-new", 1), ("e-dead", 40), ("e-pending", 20), ("e-orphan", 20)]
    {
        exec(store, outbox, &[id.into(), (now - days(age)).into()]).await;
    }
    let delivery = "INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, status, \
        next_attempt_at, enqueued_at, finished_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $5)";
    let none = SqlValue::Null;
    // id, outbox row, status, hours since enqueued, days since finished
    let rows: [Seeded; 6] = [
        ("d1", "e-old", "handled", None, Some(8)),
        ("d2", "e-old", "discarded", None, Some(8)),
        ("d3", "e-new", "handled", None, Some(1)),
        ("d4", "e-dead", "dead", None, Some(31)),
        ("d5", "e-dead", "dead", None, Some(2)),
        ("d6", "e-pending", "pending", Some(1), None),
    ];
    for (id, outbox_id, status, enqueued_hours, finished_days) in rows {
        let enqueued = enqueued_hours.map_or(none.clone(), |h| (now - Duration::hours(h)).into());
        let finished = finished_days.map_or(none.clone(), |d| (now - days(d)).into());
        let params = [
            id.into(),
            outbox_id.into(),
            format!("sub_{id}").into(),
            status.into(),
            (now - days(40)).into(),
            enqueued,
            finished,
        ];
        exec(store, delivery, &params).await;
    }
    let schedule = "INSERT INTO jadpo_schedules (name, expression, event_type, next_due_at, \
        created_at, updated_at) VALUES ('late', 'every 60s', 'report.due', $1, $1, $1)";
    exec(store, schedule, &[(now - Duration::hours(2)).into()]).await;
    let run = "INSERT INTO jadpo_schedule_runs (id, schedule, tick_at, status, trigger, recorded_at) \
        VALUES ($1, 'late', $2, 'run', 'due', $2)";
    for (i, age) in [31, 31, 31, 1].iter().enumerate() {
        exec(store, run, &[format!("late@{i}").into(), (now - days(*age)).into()]).await;
    }
    seed_step_records(store, now).await;
}

/// Step records: one finished past retention (with two steps), one finished within it, one
/// unfinished past the alert threshold.
async fn seed_step_records(store: &dyn Store, now: DateTime<Utc>) {
    let record = "INSERT INTO jadpo_step_records (run_key, action, build, step_shape, mode, \
        first_started_at, runner_generation, lease_expires_at, finished_at) \
        VALUES ($1, 'charge', 'b1', '[]', 'recorded', $2, 1, $2, $3)";
    let none = SqlValue::Null;
    let runs = [("s-old", 9, Some(8)), ("s-new", 2, Some(1)), ("s-stuck", 1, None)];
    for (key, started_days, finished_days) in runs {
        let finished = finished_days.map_or(none.clone(), |d| (now - Duration::days(d)).into());
        let started = now - Duration::days(started_days);
        exec(store, record, &[key.into(), started.into(), finished]).await;
    }
    let step = "INSERT INTO jadpo_steps (run_key, step_no, operation, idempotency_key, \
        first_sent_at, sent_at, runner_generation) VALUES ($1, $2, 'payments:/c', $3, $4, $4, 1)";
    for (key, no) in [("s-old", 0), ("s-old", 1), ("s-new", 0)] {
        let at = now - Duration::days(9);
        exec(
            store,
            step,
            &[key.into(), i64::from(no).into(), format!("{key}.{no}").into(), at.into()],
        )
        .await;
    }
}

async fn ids(store: &dyn Store, sql: &str) -> Vec<String> {
    let rows = ok(store.query_once(sql, &[]).await, sql);
    rows.iter().map(|r| ok(r.get_str("id"), "id").to_owned()).collect()
}

/// Housekeeping deletes exactly what each class's retention allows, in batches of the
/// configured size; rescues deliveries put on the queue that never finished; raises each alert
/// once; and a second pass finds nothing to do.
pub async fn housekeeping_deletes_only_what_retention_allows(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0() + Duration::days(60);
    seed(store.as_ref(), now).await;
    let clock = ManualClock::new(now);
    let rescue_after = std::time::Duration::from_secs(15 * 60);
    let report = ok(
        housekeep(store.as_ref(), &clock, &hk_settings(), rescue_after, &[], "hk").await,
        "pass",
    );
    assert_eq!(report.stopped, None);
    let deleted = |class| report.deleted.iter().find(|(c, _)| *c == class).map_or(0, |(_, n)| *n);
    assert_eq!(deleted(RecordClass::IdempotencyKeys), 5);
    assert_eq!(deleted(RecordClass::HandledDeliveries), 3);
    assert_eq!(deleted(RecordClass::FinishedDeliveries), 2);
    assert_eq!(deleted(RecordClass::DeadDeliveries), 1);
    assert_eq!(deleted(RecordClass::OutboxRows), 2);
    assert_eq!(deleted(RecordClass::ScheduleRuns), 3);
    assert_eq!(deleted(RecordClass::UserSessions), 0);
    assert_eq!(deleted(RecordClass::SignInRequests), 0);
    assert_eq!(deleted(RecordClass::PasskeyChallenges), 0);
    assert_eq!(deleted(RecordClass::UsedTokens), 0);
    assert_eq!(deleted(RecordClass::SignInSources), 0);
    assert_eq!(deleted(RecordClass::StepRecords), 1);
    // Batches of 2: 3 for the keys, 2 each for handled records, finished deliveries, outbox rows
    // and runs, 1 each for dead, users' sessions (none), sign-in requests (none), passkey
    // ceremonies (none), used tokens (none), sign-in sources (none), step records, rescue and the four alert kinds.
    assert_eq!(
        report.batches,
        3 + 2 + 2 + 1 + 2 + 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1,
        "{report:?}"
    );
    assert_eq!(
        ids(store.as_ref(), "SELECT run_key AS id FROM jadpo_step_records ORDER BY run_key").await,
        ["s-new", "s-stuck"]
    );
    assert_eq!(
        ids(store.as_ref(), "SELECT idempotency_key AS id FROM jadpo_steps").await,
        ["s-new.0"],
        "a deleted run's steps go with it"
    );
    let keys =
        ids(store.as_ref(), "SELECT key AS id FROM jadpo_idempotency_keys ORDER BY key").await;
    assert_eq!(keys, ["k5", "k6"]);
    assert_eq!(
        ids(store.as_ref(), "SELECT delivery_id AS id FROM jadpo_handled_deliveries").await,
        ["h3"]
    );
    assert_eq!(
        ids(store.as_ref(), "SELECT id FROM jadpo_deliveries ORDER BY id").await,
        ["d3", "d5", "d6"]
    );
    assert_eq!(
        ids(store.as_ref(), "SELECT id FROM jadpo_outbox ORDER BY id").await,
        ["e-dead", "e-new", "e-pending"]
    );
    assert_eq!(ids(store.as_ref(), "SELECT id FROM jadpo_schedule_runs").await, ["late@3"]);
    assert_eq!(report.rescued, 1);
    let unstamped = "SELECT id FROM jadpo_deliveries WHERE id = 'd6' AND enqueued_at IS NULL";
    assert_eq!(
        ids(store.as_ref(), unstamped).await,
        ["d6"],
        "the stuck delivery goes back to the relay"
    );
    let alerts: Vec<_> = report.alerts.iter().map(|a| (a.kind, a.item.as_str())).collect();
    assert_eq!(
        alerts,
        [("delivery.dead", "d5"), ("schedule.overdue", "late"), ("steps.unfinished", "s-stuck")]
    );
    let raised = "SELECT COUNT(*) AS n FROM jadpo_step_records WHERE alerted_at IS NOT NULL";
    assert_eq!(count(store.as_ref(), raised, &[]).await, 1, "the alert is recorded on its row");
    let done = "SELECT COUNT(*) AS n FROM jadpo_housekeeping WHERE last_completed_at = $1";
    assert_eq!(count(store.as_ref(), done, &[now.into()]).await, 1);
    clock.advance(Duration::minutes(1));
    let second = ok(
        housekeep(store.as_ref(), &clock, &hk_settings(), rescue_after, &[], "hk").await,
        "again",
    );
    assert_eq!(
        (second.total_deleted(), second.rescued, second.alerts.len()),
        (0, 0, 0),
        "{second:?}"
    );
}

/// While one housekeeper holds the lease, another does nothing; once the lease expires, the
/// next one works.
pub async fn a_second_housekeeper_waits(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = t0() + Duration::days(60);
    seed(store.as_ref(), now).await;
    let ttl = Duration::seconds(300);
    let key = jadpo_core::model::housekeeping::LEASE_KEY;
    let first =
        ok(store.lease_take(LeaseTable::Housekeeping, key, "first", now, ttl).await, "take");
    assert!(first.is_some());
    let clock = ManualClock::new(now + Duration::seconds(10));
    let rescue_after = std::time::Duration::from_secs(900);
    let waiting = ok(
        housekeep(store.as_ref(), &clock, &hk_settings(), rescue_after, &[], "second").await,
        "second",
    );
    assert!(
        waiting.stopped.as_deref().is_some_and(|s| s.contains("another housekeeper")),
        "{waiting:?}"
    );
    assert_eq!((waiting.total_deleted(), waiting.batches), (0, 0));
    let keys = "SELECT COUNT(*) AS n FROM jadpo_idempotency_keys";
    assert_eq!(count(store.as_ref(), keys, &[]).await, 7, "the waiting housekeeper deleted rows");
    clock.advance(Duration::seconds(300));
    let after = ok(
        housekeep(store.as_ref(), &clock, &hk_settings(), rescue_after, &[], "second").await,
        "after",
    );
    assert_eq!(after.stopped, None);
    assert_eq!(count(store.as_ref(), keys, &[]).await, 2);
}
