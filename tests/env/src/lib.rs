//! `jadpo-test-env`: an engine over real stores (SQLite files or PostgreSQL databases), a manual
//! clock, the in-process queue and a sink server standing in for the application's connections,
//! for the integration tests of the engine's use cases and of the runtime's edges; and
//! [`both!`], which runs a case on both adapters; and a software passkey [`authenticator`].

pub mod authenticator;
pub mod webhooks;

pub use fail::FailScenario;
pub use jadpo_test_harness::{sized, soak};

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use jadpo_application::Application;
use jadpo_core::ports::QueueMessage;
use jadpo_core::{Clock, ManualClock, Store, SystemClock};
use jadpo_engine::dispatch::{DispatchError, Dispatched, dispatch};
use jadpo_engine::migrate;
use jadpo_engine::relay::relay;
use jadpo_engine::{Engine, EngineSettings};
use jadpo_local::queue::InProcessQueue;
use jadpo_local::sink::{self, Sinks};
use jadpo_runtime::catalog_for;
use jadpo_runtime::connections::HttpConnections;
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};
use jadpo_test_harness::PgTestDb;
use tokio::sync::mpsc::UnboundedReceiver;

/// Runs each named `async fn case(kind: Kind)` as two tests, `sqlite::case` and
/// `postgres::case`, each on a two-worker runtime (a test may block one worker at a fault point).
/// `both!(faults: ...)` holds `fail`'s scenario lock for each whole test, as every test of a
/// binary that arms fault points must (they are process-wide): such tests then run one at a
/// time under `cargo test` (nextest gives each its own process anyway), and the scenario's end
/// disarms every point.
#[macro_export]
macro_rules! both {
    (faults: $($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $case() { let _faults = $crate::FailScenario::setup(); super::$case($crate::Kind::Sqlite).await; })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $case() { let _faults = $crate::FailScenario::setup(); super::$case($crate::Kind::Postgres).await; })*
        }
    };
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $case() { super::$case($crate::Kind::Sqlite).await; })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $case() { super::$case($crate::Kind::Postgres).await; })*
        }
    };
}

/// Every fault point on an order's path, in the order it meets them: the commit, the relay, the
/// delivery and the steps of the calls a subscriber makes. The crash loops of the pipeline and of
/// step records inject crashes at each.
pub const PIPELINE_FAULT_POINTS: &[&str] = &[
    "commit.after_claim",
    "commit.after_action",
    "commit.after_outbox",
    "commit.before_commit",
    "commit.after_commit",
    "relay.after_claim",
    "relay.after_send",
    "deliver.after_load",
    "deliver.after_handled_insert",
    "steps.before_sent",
    "steps.before_call",
    "steps.after_call",
    "steps.after_answer",
    "deliver.after_subscriber",
    "deliver.before_subscriber_commit",
    "deliver.after_subscriber_commit",
    "deliver.after_outcome",
];

/// The fault points of a batch of deliveries (loaded together, a shared transaction, handled
/// records in one statement, outcomes in one statement), with those of a delivery run alone
/// beside it.
pub const BATCH_FAULT_POINTS: &[&str] = &[
    "commit.after_commit",
    "relay.after_send",
    "deliver.batch.after_load",
    "deliver.batch.after_handled_insert",
    "deliver.batch.before_commit",
    "deliver.batch.after_commit",
    "deliver.batch.after_outcomes",
    "deliver.after_subscriber_commit",
    "deliver.after_outcome",
];

/// The points of `points` that have not failed (the engine's `fault_points` count) since
/// `before` was taken: a point renamed or moved off the path the loop drives.
pub fn unfired(
    points: &[&'static str],
    before: &BTreeMap<&'static str, usize>,
) -> Vec<&'static str> {
    let now = jadpo_engine::fault_points::snapshot();
    let count = |m: &BTreeMap<&'static str, usize>, p: &str| m.get(p).copied().unwrap_or(0);
    points.iter().copied().filter(|p| count(&now, p) <= count(before, p)).collect()
}

/// A crash-injection loop on both adapters: `run(kind, crash)` with each of `points` failing
/// alone, then with [`sized`]`(random)` random sets of them (each point in a set with probability
/// `chance_in_10` / 10). Prints each adapter's runs and how many lost or repeated something;
/// panics with the seed (to replay the sets) and every failure, a point that never fired on an
/// adapter among them.
pub async fn crash_loop<F, Fut>(points: &[&'static str], random: usize, chance_in_10: u8, run: F)
where
    F: Fn(Kind, Vec<&'static str>) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let scenario = fail::FailScenario::setup();
    let seed = fastrand::u64(..);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut failures = Vec::new();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let before = failures.len();
        let fired_before = jadpo_engine::fault_points::snapshot();
        let alone = points.iter().map(|p| vec![*p]);
        let sets: Vec<Vec<&'static str>> = (0..sized(random))
            .map(|_| points.iter().copied().filter(|_| rng.u8(..10) < chance_in_10).collect())
            .collect();
        let mut runs = 0;
        for crash in alone.chain(sets) {
            runs += 1;
            if let Err(e) = run(kind, crash.clone()).await {
                failures.push(format!("{kind:?} at {crash:?}: {e}"));
            }
        }
        for point in unfired(points, &fired_before) {
            failures.push(format!("{kind:?}: the fault at {point} never fired"));
        }
        println!("{kind:?}: {runs} runs, {} lost or repeated", failures.len() - before);
    }
    scenario.teardown();
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
}

/// A crash loop's run of `point` alone, failing as `when` says. A relay's point is reached only
/// when the relay has something to send, which the send right after a commit leaves it only when
/// that send did not happen: its run also crashes at `upstream` (the first time), the point
/// after that commit.
pub fn alone(
    point: &'static str,
    when: &str,
    upstream: &'static str,
) -> Vec<(&'static str, String)> {
    let mut set = vec![(point, when.to_owned())];
    if point.starts_with("relay.") {
        set.push((upstream, fails_after(0)));
    }
    set
}

/// A fault point's action that fails the `k`-th time it is reached after the first (`k` = 0:
/// the first time), so that a random set can fail a later delivery, subscriber, call or retry,
/// not always the first to arrive.
pub fn fails_after(k: usize) -> String {
    if k == 0 { "1*return".to_owned() } else { format!("{k}*off->1*return") }
}

/// One adapter's share of a crash loop over batched work: `run(kind, crash)` with each of
/// `points` failing alone the first time it is reached, then [`sized`]`(random)` random sets of them (each
/// point with probability 4/10, failing at one of its first six arrivals). Prints how many runs
/// `went_wrong` (what a failure means, e.g. `lost or left behind`); returns each failure.
pub async fn crash_sets<F, Fut>(
    kind: Kind,
    rng: &mut fastrand::Rng,
    points: &[&'static str],
    random: usize,
    went_wrong: &str,
    run: F,
) -> Vec<String>
where
    F: Fn(Kind, Vec<(&'static str, String)>) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let alone: Vec<Vec<(&'static str, String)>> =
        points.iter().map(|p| vec![(*p, fails_after(0))]).collect();
    let random: Vec<Vec<(&'static str, String)>> = (0..sized(random))
        .map(|_| {
            let chosen: Vec<_> = points.iter().filter(|_| rng.u8(..10) < 4).collect();
            chosen.into_iter().map(|p| (*p, fails_after(rng.usize(..6)))).collect()
        })
        .collect();
    let (mut failures, mut runs) = (Vec::new(), 0);
    for crash in alone.into_iter().chain(random) {
        runs += 1;
        if let Err(e) = run(kind, crash.clone()).await {
            failures.push(format!("{kind:?} at {crash:?}: {e}"));
        }
    }
    println!("{kind:?}: {runs} runs, {} {went_wrong}", failures.len());
    failures
}

/// A housekeeping pass over `env` with `crash`'s fault points armed (`(point, action)`), then,
/// once that pass's lease has run out, a second pass with none: what a crashed housekeeper
/// leaves and the next one finishes. `Err` when the second pass fails.
pub async fn housekeep_crashed_then_again(
    env: &Env,
    crash: &[(&'static str, String)],
) -> Result<(), String> {
    use jadpo_engine::housekeeping::housekeep_all;
    for (point, when) in crash {
        fail::cfg(*point, when.as_str()).map_err(|e| e.to_string())?;
    }
    let _ = housekeep_all(&env.engine, "hk-a").await;
    for (point, _) in crash {
        fail::remove(point);
    }
    let lease = env.engine.settings.housekeeping.lease_ttl + std::time::Duration::from_secs(1);
    env.clock.advance(Duration::from_std(lease).unwrap_or_default());
    let (_, failures) = housekeep_all(&env.engine, "hk-b").await;
    if failures.is_empty() { Ok(()) } else { Err(format!("the next pass failed: {failures:?}")) }
}

/// Runs a crash loop's `adapter` on SQLite, then PostgreSQL, under one fail scenario (fault
/// points are process-wide: the scenario's lock keeps the tests that arm them apart), each with a
/// random generator from one seed; panics with the seed (which replays the random sets) and the
/// failures it returned, or with each of `points` that did not fire on an adapter.
pub async fn crash_loop_on_both<F, Fut>(points: &[&'static str], adapter: F)
where
    F: Fn(Kind, fastrand::Rng) -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let scenario = fail::FailScenario::setup();
    let seed = fastrand::u64(..);
    let mut failures = Vec::new();
    for (i, kind) in [Kind::Sqlite, Kind::Postgres].into_iter().enumerate() {
        let rng = fastrand::Rng::with_seed(seed.wrapping_add(i as u64));
        let fired_before = jadpo_engine::fault_points::snapshot();
        failures.extend(adapter(kind, rng).await);
        for point in unfired(points, &fired_before) {
            failures.push(format!("{kind:?}: the fault at {point} never fired"));
        }
    }
    scenario.teardown();
    no_failures(seed, &failures);
}

/// Ends a crash loop: panics with the seed that replays its random sets and its first 20
/// failures (what was lost or repeated) when there is any.
pub fn no_failures(seed: u64, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "seed {seed}: {} failures: {:#?}",
        failures.len(),
        &failures[..failures.len().min(20)]
    );
}

/// Which adapter the stores use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SQLite files.
    Sqlite,
    /// PostgreSQL databases.
    Postgres,
}

/// A running pipeline.
pub struct Env {
    pub engine: Engine,
    pub sinks: Sinks,
    pub rx: UnboundedReceiver<QueueMessage>,
    pub clock: Arc<ManualClock>,
    sink_bases: BTreeMap<String, url::Url>,
    _sqlite_dir: Option<tempfile::TempDir>,
    _pg: Vec<PgTestDb>,
}

/// A request to run `action` with `body`, as caller `test`, without an idempotency key.
pub fn request(action: &str, body: serde_json::Value) -> jadpo_engine::commit::CommitRequest {
    let path = format!("/actions/{action}");
    jadpo_engine::commit::CommitRequest {
        action: action.to_owned(),
        request_digest: jadpo_engine::commit::request_digest("POST", &path, &body),
        input: body,
        caller: "test".to_owned(),
        principal: None,
        idempotency_key: None,
        traceparent: None,
        tracestate: None,
        request_id: "req-1".to_owned(),
    }
}

/// An action that emits event `0` with its input as the payload and answers `{"order_id": <the
/// input's "id">}`: the smallest producer for tests of the delivery side.
pub struct Emit(pub &'static str);

#[async_trait::async_trait]
impl jadpo_application::Action for Emit {
    async fn run(
        &self,
        ctx: &mut jadpo_application::HandlerContext<'_>,
        input: serde_json::Value,
    ) -> Result<jadpo_application::ActionOutput, jadpo_application::HandlerError> {
        ctx.emit(self.0, input.clone());
        Ok(jadpo_application::ActionOutput::ok(serde_json::json!({"order_id": input["id"]})))
    }
}

/// Asks for `action` with `body` under the idempotency key `key`, up to `tries` times, until it
/// is answered (each try with its own request id), and puts its deliveries on the queue as the
/// HTTP surface does: the answer's `order_id` (a client that gets no answer retries; a crash
/// loop's one-shot faults fail at most one try each).
pub async fn commit_retried(
    env: &Env,
    action: &str,
    body: &serde_json::Value,
    key: &str,
    tries: usize,
) -> Option<String> {
    for attempt in 0..tries {
        let mut asked = request(action, body.clone());
        asked.idempotency_key = Some(key.to_owned());
        asked.request_id = format!("{key}-{attempt}");
        if let Ok(outcome) = jadpo_engine::commit::commit_unsent(&env.engine, asked).await {
            jadpo_engine::relay::enqueue_now(&env.engine, &outcome.store, &outcome.deliveries)
                .await;
            return outcome.body["order_id"].as_str().map(str::to_owned);
        }
    }
    None
}

/// The `n` of `sql`'s one row in `store`, with one parameter; an error as text.
pub async fn count_where(env: &Env, store: &str, sql: &str, param: &str) -> Result<i64, String> {
    let rows = env.store(store).query_once(sql, &[param.into()]).await;
    let rows = rows.map_err(|e| e.to_string())?;
    rows.first().map_or(Ok(0), |r| r.get_i64("n")).map_err(|e| e.to_string())
}

/// Each of the shop's `orders` took effect once: `reservations` reservation rows, and its
/// receipt mailed under one key (however often it was mailed; a payment's receipt apart). Says what was lost or repeated.
pub async fn shop_orders_took_effect_once(
    env: &Env,
    orders: &[String],
    reservations: i64,
) -> Result<(), String> {
    let mailed = env.sinks.received("mailer");
    for order in orders {
        let sql = "SELECT count(*) AS n FROM shop_reservations WHERE order_id = $1";
        match count_where(env, "warehouse", sql, order).await? {
            n if n == reservations => {}
            0 => return Err(format!("lost: order {order} has no reservations")),
            n => return Err(format!("order {order} has {n} reservations, not {reservations}")),
        }
        let keys: std::collections::BTreeSet<&str> = mailed
            .iter()
            .filter(|m| m["body"]["order_id"].as_str() == Some(order))
            .filter(|m| m["body"]["charge_id"].is_null())
            .filter_map(|m| m["idempotency_key"].as_str())
            .collect();
        if keys.len() != 1 {
            return Err(format!("order {order}'s receipt was mailed under keys {keys:?}"));
        }
    }
    Ok(())
}

/// Commits `request` and puts its deliveries on the in-process queue, as the HTTP surface does.
pub async fn commit_and_enqueue(env: &Env, request: jadpo_engine::commit::CommitRequest) {
    let outcome = jadpo_engine::commit::commit_unsent(&env.engine, request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    jadpo_engine::relay::enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
}

pub fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default()
}

async fn open(
    kind: Kind,
    name: &str,
    dir: &std::path::Path,
    pg: &mut Vec<PgTestDb>,
    pg_pool: usize,
) -> Arc<dyn Store> {
    match kind {
        Kind::Sqlite => {
            let location = SqliteLocation::File(dir.join(format!("{name}.db")));
            let store =
                Sqlite::open(name, &location, &SqliteOptions::default(), Arc::new(SystemClock));
            Arc::new(store.unwrap_or_else(|e| panic!("{e}")))
        }
        Kind::Postgres => {
            let db = PgTestDb::empty().await;
            let options = PgOptions { pool_size: pg_pool, ..PgOptions::default() };
            let store =
                Postgres::connect(name, db.url(), &options).unwrap_or_else(|e| panic!("{e}"));
            pg.push(db);
            Arc::new(store)
        }
    }
}

/// A sink server on a free port, and the base URL of every declared connection on it.
async fn sink_server(app: &Application) -> (Sinks, BTreeMap<String, url::Url>) {
    let sinks = Sinks::default();
    let listener =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(axum::serve(listener, sink::router(sinks.clone())).into_future());
    let bases = app
        .connections()
        .iter()
        .map(|name| {
            (
                name.clone(),
                url::Url::parse(&format!("http://{addr}/sink/{name}"))
                    .unwrap_or_else(|e| panic!("{e}")),
            )
        })
        .collect();
    (sinks, bases)
}

fn connections_to(bases: &BTreeMap<String, url::Url>) -> HttpConnections {
    HttpConnections::new(bases.clone(), std::time::Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{e}"))
}

impl Env {
    pub async fn new(kind: Kind, app: Application, settings: EngineSettings) -> Self {
        Self::with_pg_pool(kind, app, settings, PgOptions::default().pool_size).await
    }

    /// As [`new`](Self::new), with `pg_pool` connections per PostgreSQL store (benchmarks with
    /// many clients).
    pub async fn with_pg_pool(
        kind: Kind,
        app: Application,
        settings: EngineSettings,
        pg_pool: usize,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut pg = Vec::new();
        let mut stores = BTreeMap::new();
        for name in app.stores() {
            let store = open(kind, name, dir.path(), &mut pg, pg_pool).await;
            let catalog = catalog_for(&app, store.as_ref()).unwrap_or_else(|e| panic!("{e}"));
            migrate::apply(store.as_ref(), &catalog).await.unwrap_or_else(|e| panic!("{e}"));
            // As `migrate_all` does: the triggers of audited entities and file fields here.
            jadpo_engine::migrate::install_triggers(store.as_ref(), &app, name)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            stores.insert(name.clone(), store);
        }
        let (queue, rx) = InProcessQueue::new();
        let clock = Arc::new(ManualClock::new(t0()));
        let (sinks, sink_bases) = sink_server(&app).await;
        let connections = connections_to(&sink_bases);
        let blobs = (!app.file_fields().is_empty()).then(|| {
            let blobs = jadpo_runtime::blobs::DirBlobs::open(&dir.path().join("files"));
            Arc::new(blobs.unwrap_or_else(|e| panic!("{e}"))) as Arc<dyn jadpo_core::ports::Blobs>
        });
        let engine = Engine {
            app: Arc::new(app),
            stores,
            queue: Arc::new(queue),
            clock: Arc::clone(&clock) as Arc<dyn Clock>,
            connections: Arc::new(connections),
            settings,
            runs: jadpo_engine::steps::RunEnv::ephemeral(),
            blobs,
            breakers_seen: Default::default(),
            key_sets: Default::default(),
        };
        Self { engine, sinks, sink_bases, rx, clock, _sqlite_dir: Some(dir), _pg: pg }
    }

    /// The engine with connections of its own (its own HTTP connection pool) and its own
    /// memory of breakers seen closed, as another process's: what it leaves stalled does not
    /// hold a connection this one uses.
    pub fn another_process(&self) -> Engine {
        let mut engine = self.engine.clone();
        engine.connections = Arc::new(connections_to(&self.sink_bases));
        engine.breakers_seen = Default::default();
        engine
    }

    pub async fn shop(kind: Kind) -> Self {
        let app = jadpo_app::application().unwrap_or_else(|e| panic!("{e}"));
        Self::new(kind, app, EngineSettings::default()).await
    }

    /// Delivers every queued message (including those delivering enqueues), returning results.
    pub async fn drain(&mut self) -> Vec<Result<Dispatched, DispatchError>> {
        let mut results = Vec::new();
        while let Ok(message) = self.rx.try_recv() {
            results.push(dispatch(&self.engine, &message.body).await);
        }
        results
    }

    /// Delivers what is queued as a local worker with a batch of `batch` would: up to `batch`
    /// messages at a time through `dispatch_many`, until the queue is empty.
    pub async fn drain_batched(&mut self, batch: usize) -> Vec<Result<Dispatched, DispatchError>> {
        let mut results = Vec::new();
        loop {
            let mut bodies = Vec::new();
            while bodies.len() < batch {
                match self.rx.try_recv() {
                    Ok(message) => bodies.push(message.body),
                    Err(_) => break,
                }
            }
            if bodies.is_empty() {
                return results;
            }
            let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
            results.extend(jadpo_engine::dispatch::dispatch_many(&self.engine, &refs).await);
        }
    }

    /// Runs deliveries and relay sweeps, moving time on, until nothing is left to do; returns
    /// the errors seen on the way (injected faults, for instance).
    pub async fn settle(&mut self) -> Vec<String> {
        self.settle_batched(1).await
    }

    /// As [`settle`](Self::settle), delivering in batches of up to `batch` messages.
    pub async fn settle_batched(&mut self, batch: usize) -> Vec<String> {
        let mut errors = Vec::new();
        for _ in 0..60 {
            let results =
                if batch > 1 { self.drain_batched(batch).await } else { self.drain().await };
            let delivered = results.len();
            errors.extend(results.into_iter().filter_map(Result::err).map(|e| e.to_string()));
            self.clock.advance(Duration::minutes(20));
            let deadline = Instant::now() + std::time::Duration::from_secs(5);
            let sent = match relay(&self.engine, deadline).await {
                Ok(report) => report.sent,
                Err(e) => {
                    errors.push(e.to_string());
                    1 // try again
                }
            };
            if delivered == 0 && sent == 0 {
                return errors;
            }
        }
        panic!("the engine did not settle");
    }

    pub fn store(&self, name: &str) -> &Arc<dyn Store> {
        self.engine.stores.get(name).unwrap_or_else(|| panic!("no store {name}"))
    }

    pub async fn count(&self, store: &str, sql: &str) -> i64 {
        let mut tx = self.store(store).begin().await.unwrap_or_else(|e| panic!("{e}"));
        let row = tx.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
        row.get_i64("n").unwrap_or_else(|e| panic!("{e}"))
    }
}
