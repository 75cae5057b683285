//! The real process killed at injected step boundaries, on both adapters: `jadpo-local` (built
//! for tests with its `crash-points` feature) is started with `JADPO_CRASH_AT` naming one fault
//! point and the arrival to crash at, takes orders from a client that retries each under its
//! `Idempotency-Key` until it is acknowledged, and aborts there: no destructor, no flush, no
//! drain. The next run's process starts on the same stores with another point, picks up what the
//! last one left (its in-process queue is gone: the relay resends) and takes new orders until it
//! crashes in turn; each point alone first (at its first arrival), then random points at one of
//! their first four arrivals; a last process without a crash finishes the work.
//!
//! Afterwards: every order was acknowledged, exists once and has its one reservation; every
//! delivery ended handled, each handled once. Prints, per adapter, the runs, where each crashed,
//! the orders acknowledged, lost and repeated. `JADPO_CRASH_RUNS` sets the runs per adapter.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Local, read_key, start_local_with};
use jadpo_core::{Store, SystemClock};
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};
use jadpo_test_harness::PgTestDb;

/// The boundaries crashed at: the commit and its immediate send, the batched and the single
/// delivery paths, the recorded call of `send_receipt`, and the relay (placed after a crash
/// mid-delivery, which leaves it messages to resend). The mailer answers here, so its circuit
/// breaker stays closed and never commits (a closed breaker's pass and a success change
/// nothing): the breaker's own boundaries are crashed at where it opens and closes, in the
/// engine's `breaker_faults`.
const POINTS: &[&str] = &[
    "commit.after_action",
    "commit.before_commit",
    "commit.after_commit",
    "enqueue.after_send",
    "deliver.batch.before_commit",
    "relay.after_claim",
    "deliver.batch.after_commit",
    "relay.after_send",
    "deliver.batch.after_outcomes",
    "steps.before_call",
    "steps.after_call",
    "steps.after_answer",
    "deliver.before_subscriber_commit",
    "deliver.after_subscriber_commit",
    "deliver.after_outcome",
];

/// New orders each run places (more are retried when a crash cut the last run short).
const ORDERS_PER_RUN: usize = 3;

/// In the random runs a point crashes at one of its first this-many arrivals.
const ARRIVALS: usize = 4;

/// Runs per adapter: each point alone, then random ones (six in `make test`, more under
/// `make soak`).
fn runs() -> usize {
    let asked = std::env::var("JADPO_CRASH_RUNS").ok().and_then(|n| n.parse().ok());
    asked.unwrap_or(POINTS.len() + 6).max(POINTS.len())
}

/// The stores of one adapter, the variables that point `jadpo-local` at them, and a store
/// handle of the test's own on each for its checks.
struct Bed {
    dir: tempfile::TempDir,
    vars: Vec<(&'static str, String)>,
    main: Arc<dyn Store>,
    warehouse: Arc<dyn Store>,
    _pg: Vec<PgTestDb>,
}

impl Bed {
    async fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = |name: &str| dir.path().join(format!("{name}.db"));
        let url = |name: &str| format!("sqlite://{}", path(name).display());
        let vars =
            vec![("DATABASE_URL", url("main")), ("DATABASE_URL_WAREHOUSE", url("warehouse"))];
        let open = |name: &str| -> Arc<dyn Store> {
            let location = SqliteLocation::File(path(name));
            let options = SqliteOptions::default();
            let store = Sqlite::open("check", &location, &options, Arc::new(SystemClock));
            Arc::new(store.unwrap_or_else(|e| panic!("{e}")))
        };
        let (main, warehouse) = (open("main"), open("warehouse"));
        Self { dir, vars, main, warehouse, _pg: Vec::new() }
    }

    async fn postgres() -> Self {
        let (main_db, warehouse_db) = (PgTestDb::empty().await, PgTestDb::empty().await);
        let vars = vec![
            ("DATABASE_URL", main_db.url().to_owned()),
            ("DATABASE_URL_WAREHOUSE", warehouse_db.url().to_owned()),
        ];
        let open = |url: &str| -> Arc<dyn Store> {
            let store = Postgres::connect("check", url, &PgOptions::default());
            Arc::new(store.unwrap_or_else(|e| panic!("{e}")))
        };
        let (main, warehouse) = (open(main_db.url()), open(warehouse_db.url()));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        Self { dir, vars, main, warehouse, _pg: vec![main_db, warehouse_db] }
    }

    /// Starts `jadpo-local` on the bed's stores, crashing where `crash_at` says.
    fn start(&self, crash_at: Option<&str>) -> Local {
        let mut vars: Vec<(&str, &str)> = self.vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        vars.extend([
            // What a crashed process had queued is resent after this long.
            ("JADPO_REDELIVERY_AFTER_SECS", "1"),
            // A run a crashed process held is taken up again after this long (120 s by default).
            ("JADPO_STEP_LEASE_SECS", "2"),
            ("JADPO_CRASH_AT", crash_at.unwrap_or("")),
        ]);
        start_local_with(self.dir.path(), &vars)
    }

    async fn count(&self, store: &dyn Store, sql: &str, param: Option<&str>) -> i64 {
        let params: Vec<jadpo_core::SqlValue> = param.into_iter().map(Into::into).collect();
        let rows = store.query_once(sql, &params).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        rows[0].get_i64("n").unwrap_or_else(|e| panic!("{e}"))
    }

    /// The deliveries not yet handled, as text.
    async fn unfinished_rows(&self) -> Vec<String> {
        let sql = "SELECT id, subscriber, status, attempts, enqueued_at, next_attempt_at, \
                   held_connection, last_failure FROM jadpo_deliveries WHERE status <> 'handled'";
        let rows = self.main.query_once(sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
        rows.iter().map(|r| format!("{:?}", r.values())).collect()
    }

    /// Deliveries not yet handled.
    async fn unfinished(&self) -> i64 {
        let sql = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
        self.count(self.main.as_ref(), sql, None).await
    }
}

/// Places order `n` on the process at `port`: its id when acknowledged (201, or the replay of
/// its key), `None` when the process could not be reached or did not answer 201.
fn place(port: u16, key: &str, n: usize) -> Option<String> {
    let request = common::order_request(key, n);
    let answer = common::try_http(port, &request)?;
    if !answer.starts_with("HTTP/1.1 201") {
        return None;
    }
    common::order_id(&answer)
}

/// What one process did: whether it crashed at its point, and the orders it acknowledged.
struct Run {
    crashed: bool,
    acknowledged: BTreeMap<usize, String>,
}

/// Runs one process until it crashes, or until it has acknowledged `orders` and handled every
/// delivery without crashing (then it is killed outright, as a crash elsewhere would).
async fn one_process(bed: &Bed, crash_at: Option<&str>, orders: Vec<usize>) -> Run {
    let mut local = bed.start(crash_at);
    let key = read_key(&mut local);
    let port = local.port;
    let placing = tokio::task::spawn_blocking(move || {
        let mut acknowledged = BTreeMap::new();
        for n in orders {
            let placed = (0..3).find_map(|_| {
                let placed = place(port, &key, n);
                if placed.is_none() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                placed
            });
            // Unanswered three times: the process is gone (crashed at its point). The orders
            // left wait for the next process, rather than each for its three tries here; a
            // long loop's backlog of them made each run after an early crash take minutes.
            let Some(id) = placed else { break };
            acknowledged.insert(n, id);
        }
        acknowledged
    });
    let acknowledged = placing.await.unwrap_or_else(|e| panic!("{e}"));
    // A crash point not reached is given up on sooner than the clean process's work.
    let patience = if crash_at.is_some() { 20 } else { 60 };
    let deadline = Instant::now() + Duration::from_secs(patience);
    let mut settled_since = None;
    loop {
        if let Some(status) = local.child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            // Any other end (a panic, an error) is a failure of its own.
            assert_eq!(status.signal(), Some(SIGABRT), "{crash_at:?}: the process ended: {status}");
            assert!(crash_at.is_some(), "the process without a crash point aborted");
            return Run { crashed: true, acknowledged };
        }
        // No crash wanted, or its point not reached: done once nothing has been left for a while.
        let settled = bed.unfinished().await == 0;
        settled_since = if settled { settled_since.or(Some(Instant::now())) } else { None };
        let quiet = settled_since.is_some_and(|t| t.elapsed() > Duration::from_millis(1500));
        if quiet || Instant::now() > deadline {
            if crash_at.is_none() && !quiet {
                panic!(
                    "the clean process never finished the work: {:#?}",
                    bed.unfinished_rows().await
                );
            }
            let _ = local.child.kill();
            let _ = local.child.wait();
            return Run { crashed: false, acknowledged };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `SIGABRT`, what `std::process::abort` ends a process with.
const SIGABRT: i32 = 6;

/// One adapter's loop; what was lost or repeated.
async fn adapter(name: &str, bed: Bed, rng: &mut fastrand::Rng) -> Vec<String> {
    let started = Instant::now();
    let total = runs();
    let (mut acknowledged, mut next) = (BTreeMap::<usize, String>::new(), 0);
    let mut crashes = BTreeMap::<&str, usize>::new();
    let mut failures = Vec::new();
    let plan: Vec<(&str, usize)> = POINTS
        .iter()
        .map(|p| (*p, 0))
        .chain(
            (POINTS.len()..total)
                .map(|_| (POINTS[rng.usize(..POINTS.len())], rng.usize(..ARRIVALS))),
        )
        .collect();
    for (point, k) in plan.iter().map(|(p, k)| (Some(*p), *k)).chain([(None, 0)]) {
        // The orders a crash left unacknowledged, then new ones (none for the last process).
        let mut orders: Vec<usize> = (0..next).filter(|n| !acknowledged.contains_key(n)).collect();
        if point.is_some() {
            orders.extend(next..next + ORDERS_PER_RUN);
            next += ORDERS_PER_RUN;
        }
        let crash_at = point.map(|p| format!("{p}:{k}"));
        let run = one_process(&bed, crash_at.as_deref(), orders).await;
        if let (Some(p), true) = (point, run.crashed) {
            *crashes.entry(p).or_default() += 1;
        }
        for (n, id) in run.acknowledged {
            if let Some(before) = acknowledged.insert(n, id.clone()) {
                if before != id {
                    failures.push(format!("{name}: order {n} acknowledged as {before}, then {id}"));
                }
            }
        }
    }
    failures.extend(check(name, &bed, &acknowledged, next).await);
    let runs = plan.len() + 1;
    let crashed: usize = crashes.values().sum();
    println!(
        "{name}: {runs} processes in {:.0} s, {crashed} crashed at their point ({crashes:?}); \
         orders {next}, acknowledged {}, failures {}",
        started.elapsed().as_secs_f64(),
        acknowledged.len(),
        failures.len()
    );
    for point in POINTS.iter().filter(|p| !crashes.contains_key(*p)) {
        failures.push(format!("{name}: no process crashed at {point}"));
    }
    failures
}

/// Every order acknowledged once, written once, reserved once; every delivery handled once.
async fn check(
    name: &str,
    bed: &Bed,
    acknowledged: &BTreeMap<usize, String>,
    orders: usize,
) -> Vec<String> {
    let mut failures = Vec::new();
    if acknowledged.len() != orders {
        let missing: BTreeSet<usize> =
            (0..orders).filter(|n| !acknowledged.contains_key(n)).collect();
        failures.push(format!("{name}: orders never acknowledged: {missing:?}"));
    }
    let (main, warehouse) = (bed.main.as_ref(), bed.warehouse.as_ref());
    for (n, id) in acknowledged {
        let sql = "SELECT count(*) AS n FROM shop_orders WHERE id = $1";
        if bed.count(main, sql, Some(id)).await != 1 {
            failures
                .push(format!("{name}: lost: order {n} ({id}) was acknowledged, is not stored"));
        }
        let sql = "SELECT count(*) AS n FROM shop_reservations WHERE order_id = $1";
        match bed.count(warehouse, sql, Some(id)).await {
            1 => {}
            r => failures.push(format!("{name}: order {n} ({id}) has {r} reservations, not 1")),
        }
    }
    let written = bed.count(main, "SELECT count(*) AS n FROM shop_orders", None).await;
    let distinct =
        bed.count(main, "SELECT count(DISTINCT customer) AS n FROM shop_orders", None).await;
    if written != distinct {
        failures
            .push(format!("{name}: repeated: {written} orders written for {distinct} customers"));
    }
    let unfinished = bed.unfinished().await;
    let deliveries = bed.count(main, "SELECT count(*) AS n FROM jadpo_deliveries", None).await;
    let handled = "SELECT count(*) AS n FROM jadpo_handled_deliveries";
    let handled = bed.count(main, handled, None).await + bed.count(warehouse, handled, None).await;
    if unfinished != 0 || handled != deliveries {
        failures.push(format!(
            "{name}: {deliveries} deliveries, {unfinished} unfinished, {handled} handled records"
        ));
    }
    failures
}

/// One adapter's loop with a seed of its own (`CRASH_SEED` replays a failed run's choices).
async fn killed_at_any_boundary(name: &str, bed: Bed) {
    let seed = std::env::var("CRASH_SEED").ok().and_then(|s| s.parse().ok());
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    let failures = adapter(name, bed, &mut rng).await;
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
}

// One test per adapter, so that the two loops (each minutes of real processes) run side by side.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_the_process_killed_at_any_boundary_loses_nothing_and_repeats_nothing() {
    killed_at_any_boundary("SQLite", Bed::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_process_killed_at_any_boundary_loses_nothing_and_repeats_nothing() {
    killed_at_any_boundary("PostgreSQL", Bed::postgres().await).await;
}

#[test]
fn a_malformed_crash_point_stops_the_start_and_says_why() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_jadpo-local"))
        .current_dir(dir.path())
        .env("JADPO_LISTEN", "127.0.0.1:0")
        .env("JADPO_CRASH_AT", "steps.after_call:soon")
        .output()
        .unwrap_or_else(|e| panic!("cannot start jadpo-local: {e}"));
    assert!(!output.status.success(), "it started");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("JADPO_CRASH_AT: \"steps.after_call:soon\""), "{stderr}");
    assert!(!Path::new(&dir.path().join(".jadpo")).exists(), "it made its stores first");
}

/// A process killed while it holds a recorded call's step lease (default: two minutes), then
/// restarted alone on its SQLite files: it takes its dead predecessor's leases over at start,
/// so the interrupted delivery is handled within seconds, not after the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_process_alone_on_its_files_takes_over_the_dead_one_s_step_leases() {
    let bed = Bed::sqlite().await;
    let start = |crash_at: &str| {
        let mut vars: Vec<(&str, &str)> = bed.vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        vars.extend([("JADPO_REDELIVERY_AFTER_SECS", "1"), ("JADPO_CRASH_AT", crash_at)]);
        start_local_with(bed.dir.path(), &vars)
    };
    let mut local = start("steps.after_call");
    let key = read_key(&mut local);
    let port = local.port;
    let placed = tokio::task::spawn_blocking(move || place(port, &key, 1));
    let _ = placed.await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let ended = loop {
        if let Some(status) = local.child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break status;
        }
        assert!(Instant::now() < deadline, "the process never reached steps.after_call");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(ended.signal(), Some(SIGABRT), "{ended}");
    let held = "SELECT count(*) AS n FROM jadpo_step_records WHERE finished_at IS NULL";
    assert!(bed.count(bed.main.as_ref(), held, None).await > 0, "no step lease was left held");

    let restarted = Instant::now();
    let mut local = start("");
    let _ = read_key(&mut local);
    while bed.unfinished().await > 0 {
        assert!(
            restarted.elapsed() < Duration::from_secs(45),
            "the dead process's step lease was waited out: {:#?}",
            bed.unfinished_rows().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = restarted.elapsed();
    let _ = local.child.kill();
    let _ = local.child.wait();
    println!("after the crash, the restarted process handled everything in {took:?}");
}
