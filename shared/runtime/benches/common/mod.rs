//! What the benchmarks share: the pgbench ceiling, the process's CPU time, fresh statistics, and
//! the end-to-end runs (events through their subscribers, workflow runs through their commands)
//! that the pipeline, workflow and peers benchmarks time in their own shapes.

#![allow(dead_code, reason = "each benchmark uses part of this module")]

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jadpo_application::{Application, Capability, CapabilityContext, CommandRequest, HandlerError};
use jadpo_core::ports::NoConnections;
use jadpo_core::ports::QueueMessage;
use jadpo_core::{Store, SystemClock};
use jadpo_engine::commit::{CommitRequest, commit_unsent};
use jadpo_engine::migrate;
use jadpo_engine::relay::enqueue_now;
use jadpo_engine::workflow::runs::start_run;
use jadpo_engine::{Engine, EngineSettings};
use jadpo_local::loops::{Inbox, delivery_loop};
use jadpo_local::queue::InProcessQueue;
use jadpo_runtime::catalog_for;
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_workflow::def::Node;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;

/// A PostgreSQL client program from `pg_config --bindir`, else from `PATH`.
fn pg_bin(name: &str) -> String {
    let bindir = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    bindir.map(|d| format!("{d}/{name}")).unwrap_or_else(|| name.to_owned())
}

/// Runs one SQL statement with `psql` outside any transaction (`VACUUM` cannot run inside one).
pub(crate) fn psql(url: &str, sql: &str) {
    let out = Command::new(pg_bin("psql"))
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql, url])
        .output()
        .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Transactions/s of `script` under pgbench (`-M prepared`) with `clients` for `seconds`.
pub(crate) fn pgbench_tps(url: &str, script_text: &str, clients: usize, seconds: u64) -> f64 {
    let pgbench = pg_bin("pgbench");
    let script =
        std::env::temp_dir().join(format!("jadpo-bench-{}-{clients}.sql", std::process::id()));
    std::fs::write(&script, script_text).unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(pgbench)
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients.to_string(),
            "-j",
            &clients.min(2).to_string(),
            "-T",
            &seconds.to_string(),
            "-f",
        ])
        .arg(&script)
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run pgbench: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let tps = text
        .lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l[6..].split_whitespace().next())
        .and_then(|v| v.parse().ok());
    tps.unwrap_or_else(|| panic!("pgbench failed: {text}{}", String::from_utf8_lossy(&out.stderr)))
}

/// This process's CPU time so far (user + system), from `/proc/self/stat`, in seconds.
pub(crate) fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are the 14th and 15th fields; 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// Refreshes planner statistics between phases. Each phase adds tens of thousands of rows to a
/// brand-new database faster than autovacuum's one-minute nap; without fresh statistics, plans
/// cached while the tables were tiny (sequential scans) would be measured instead of the code.
pub(crate) async fn analyze(engine: &Engine) {
    for store in engine.stores.values() {
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        tx.batch("ANALYZE").await.unwrap_or_else(|e| panic!("{e}"));
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    }
}

/// How long the producers of an end-to-end run keep going.
#[derive(Clone, Copy)]
pub(crate) enum Load {
    /// Each producer commits this many, sleeping `pace` after each when given.
    Count { per_client: usize, pace: Option<Duration> },
    /// Each producer commits until this much time has passed (the peers' steady shape).
    For(Duration),
}

impl Load {
    /// Whether a producer that has committed `done` goes on, for a run that began at `start`.
    fn more(&self, done: usize, start: Instant) -> bool {
        match self {
            Self::Count { per_client, .. } => done < *per_client,
            Self::For(length) => start.elapsed() < *length,
        }
    }

    async fn pause(&self) {
        if let Self::Count { pace: Some(pace), .. } = self {
            tokio::time::sleep(*pace).await;
        }
    }
}

/// When each subscriber started each order's delivery, keyed `order/subscriber`.
pub(crate) type Starts = Arc<Mutex<BTreeMap<String, Instant>>>;

/// Records a subscriber's start for an order (its first start: a retry does not move it).
pub(crate) fn started(starts: &Starts, order: &str, subscriber: &str) {
    starts
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(format!("{order}/{subscriber}"))
        .or_insert_with(Instant::now);
}

/// What an end-to-end run measured.
pub(crate) struct EndToEnd {
    /// Deliveries handled.
    pub deliveries: usize,
    /// Deliveries handled per second, from the first commit to the last delivery.
    pub per_s: f64,
    /// Commit return → subscriber start, median and 99th percentile, in milliseconds.
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// The value at quantile `q` of `sorted` (NaN when empty).
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted.get(((sorted.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN)
}

/// How long a delivery worker waits to fill a batch while another is busy: `jadpo-local`'s
/// default, or `JADPO_DELIVERY_LINGER_MS` as `jadpo-local` reads it.
pub(crate) fn linger() -> Duration {
    let ms = std::env::var("JADPO_DELIVERY_LINGER_MS").ok().and_then(|v| v.parse().ok());
    Duration::from_millis(ms.unwrap_or(2))
}

/// Most messages a delivery worker takes at once: `batch`, or `JADPO_DELIVERY_BATCH` as
/// `jadpo-local` reads it.
pub(crate) fn batch_or_env(batch: usize) -> usize {
    let given = std::env::var("JADPO_DELIVERY_BATCH").ok().and_then(|v| v.parse().ok());
    given.unwrap_or(batch)
}

/// `jadpo-local`'s delivery workers, running until told to finish.
pub(crate) struct Workers {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<usize>,
}

impl Workers {
    /// Tells the workers to stop once the queue is empty (what is queued, and what handling it
    /// queues, is delivered first), waits for them, and returns the time from `start` to their
    /// end and the messages they handled.
    pub(crate) async fn finish(self, start: Instant) -> (Duration, usize) {
        let _ = self.stop.send(true);
        let handled = self.task.await.unwrap_or_else(|e| panic!("the workers failed: {e}"));
        (start.elapsed(), handled)
    }
}

/// `count` of `jadpo-local`'s delivery workers sharing `rx`, each taking up to `batch` queued
/// messages at once (waiting up to [`linger`] for more while another is busy).
pub(crate) fn spawn_workers(
    engine: &Engine,
    rx: UnboundedReceiver<QueueMessage>,
    count: usize,
    batch: usize,
) -> Workers {
    let (stop, stopped) = watch::channel(false);
    let inbox = Inbox { rx, backlog: None, batch: batch_or_env(batch), linger: linger() };
    Workers { stop, task: tokio::spawn(delivery_loop(engine.clone(), inbox, stopped, count)) }
}

/// Commits `request(client)` from `clients` producers under `load` while as many delivery
/// workers, each taking up to `batch` queued messages at once, deliver every event to its
/// `fan_out` subscribers through the in-process queue.
pub(crate) async fn end_to_end(
    base: &Engine,
    starts: &Starts,
    clients: usize,
    load: Load,
    batch: usize,
    fan_out: usize,
    request: fn(usize) -> CommitRequest,
) -> EndToEnd {
    starts.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let (queue, rx) = InProcessQueue::new();
    let mut engine = base.clone();
    engine.queue = Arc::new(queue);
    let engine = &engine;
    let workers = spawn_workers(engine, rx, clients, batch);
    let committed: Arc<Mutex<BTreeMap<String, Instant>>> = Arc::default();
    let start = Instant::now();
    let producers: Vec<_> = (0..clients)
        .map(|c| {
            let (engine, committed) = (engine.clone(), Arc::clone(&committed));
            tokio::spawn(async move {
                let mut n = 0;
                while load.more(n, start) {
                    let outcome =
                        commit_unsent(&engine, request(c)).await.unwrap_or_else(|e| panic!("{e}"));
                    let at = Instant::now();
                    let id = outcome.body["order_id"].as_str().unwrap_or_default().to_owned();
                    committed.lock().unwrap_or_else(|e| e.into_inner()).insert(id, at);
                    enqueue_now(&engine, &outcome.store, &outcome.deliveries).await;
                    n += 1;
                    load.pause().await;
                }
            })
        })
        .collect();
    for t in producers {
        t.await.unwrap_or_else(|e| panic!("a producer failed: {e}"));
    }
    let committed = committed.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let deliveries = committed.len() * fan_out;
    let (elapsed, handled) = workers.finish(start).await;
    assert_eq!(handled, deliveries, "every delivery handled once");
    let mut latencies: Vec<f64> = starts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(|(k, started)| {
            let order = k.split('/').next().unwrap_or_default();
            committed
                .get(order)
                .map(|c| started.saturating_duration_since(*c).as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    EndToEnd {
        deliveries,
        per_s: deliveries as f64 / elapsed.as_secs_f64(),
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
    }
}

/// Starts runs of `workflow` (`steps` commands each) from `clients` producers under `load`
/// while as many workers run their commands through the in-process queue. Returns the runs
/// started and completed runs/s, from the first start to the last command.
pub(crate) async fn runs_end_to_end(
    base: &Engine,
    clients: usize,
    workflow: &'static str,
    steps: usize,
    load: Load,
) -> (usize, f64) {
    let (queue, rx) = InProcessQueue::new();
    let mut engine = base.clone();
    engine.queue = Arc::new(queue);
    let steps_before = STEPS_RUN.load(Ordering::Relaxed);
    let start = Instant::now();
    let workers = spawn_workers(&engine, rx, clients, 1);
    let producers: Vec<_> = (0..clients)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while load.more(n, start) {
                    start_run(&engine, workflow, json!({}), None, None)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                    load.pause().await;
                }
                n
            })
        })
        .collect();
    let mut runs = 0;
    for t in producers {
        runs += t.await.unwrap_or_else(|e| panic!("a producer failed: {e}"));
    }
    let (elapsed, handled) = workers.finish(start).await;
    // A run's next command runs right behind the last one, without a queue message, so the
    // messages handled lie between one per run and one per command.
    assert!((runs..=runs * steps).contains(&handled), "{handled} messages for {runs} runs");
    let ran = STEPS_RUN.load(Ordering::Relaxed) - steps_before;
    assert_eq!(ran, runs * steps, "every command run once");
    (runs, runs as f64 / elapsed.as_secs_f64())
}

/// How many times [`Step`] has run in this process.
static STEPS_RUN: AtomicUsize = AtomicUsize::new(0);

/// A capability that only answers, as a no-op step.
pub(crate) struct Step;

#[async_trait]
impl Capability for Step {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        c: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        STEPS_RUN.fetch_add(1, Ordering::Relaxed);
        Ok(json!({"node": c.node_id}))
    }
}

/// A workflow node running [`Step`] (capability `step`), then `next`.
pub(crate) fn step(next: &str) -> Node {
    Node::Capability {
        capability: "step".into(),
        inputs: vec![],
        idempotency_key: Some("{run_id}:{node}".into()),
        output: next.into(),
        next: next.into(),
        on_failure: None,
        compensate: None,
    }
}

/// A request for `action` with `input`, as client `i` sends it (no idempotency key).
pub(crate) fn action_request(action: &str, input: Value, i: usize) -> CommitRequest {
    CommitRequest {
        action: action.into(),
        input,
        caller: "bench".into(),
        principal: None,
        idempotency_key: None,
        request_digest: String::new(),
        traceparent: None,
        tracestate: None,
        request_id: i.to_string(),
    }
}

/// An engine for `app` over one PostgreSQL store `main` at `url` (pool of 10), migrated, on the
/// in-process queue; each end-to-end run puts its own queue in.
pub(crate) async fn engine_on(app: Application, url: &str) -> Engine {
    let options = PgOptions { pool_size: 10, ..PgOptions::default() };
    let store: Arc<dyn Store> =
        Arc::new(Postgres::connect("main", url, &options).unwrap_or_else(|e| panic!("{e}")));
    let catalog = catalog_for(&app, store.as_ref()).unwrap_or_else(|e| panic!("{e}"));
    migrate::apply(store.as_ref(), &catalog).await.unwrap_or_else(|e| panic!("{e}"));
    let (queue, _unused) = InProcessQueue::new();
    Engine {
        app: Arc::new(app),
        stores: [("main".to_owned(), store)].into_iter().collect(),
        queue: Arc::new(queue),
        clock: Arc::new(SystemClock),
        connections: Arc::new(NoConnections),
        settings: EngineSettings::default(),
        runs: jadpo_engine::steps::RunEnv::ephemeral(),
        blobs: None,
        breakers_seen: Default::default(),
        key_sets: Default::default(),
    }
}
