//! Benchmark: the console's pages over 1,000 and over 1,000,000 deliveries, on PostgreSQL and
//! SQLite, in one process.
//!
//! Each store is seeded by SQL with one event per delivery, a second apart: 90% handled, 9%
//! pending, 1% dead (two failures, two subscribers). The pages are requested through the
//! console's own router (no network), each 3 times to warm up and then 21 times; the median is
//! reported, and the ratio of the large store's median to the small one's: a page read by keyset
//! costs the same however many deliveries there are. `make bench` runs it and adds the section
//! to BENCHMARKS.md.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_application::Application;
use jadpo_console::{Console, ConsoleSettings, console};
use jadpo_core::ports::NoConnections;
use jadpo_core::{Store, SystemClock, TransactionalStore};
use jadpo_engine::operate::Operator;
use jadpo_engine::{Engine, EngineSettings, migrate};
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_test_harness::{PgTestDb, SqliteTestDb};
use jadpo_workflow::def::{Node, WorkflowDef};
use tower::ServiceExt;

const SMALL: u64 = 1_000;
const LARGE: u64 = 1_000_000;
const WARM: usize = 3;
const TIMED: usize = 21;

fn pg_seed(n: u64) -> String {
    format!(
        "INSERT INTO jadpo_outbox (id, event_type, payload, chain_depth, source, created_at) \
         SELECT 'e' || lpad(g::text, 8, '0'), \
         CASE WHEN g % 2 = 0 THEN 'order.placed' ELSE 'order.paid' END, '{{\"n\": 1}}', 0, \
         'bench', timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' \
         FROM generate_series(1, {n}) g; \
         INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, status, attempts, \
         next_attempt_at, last_failure, finished_at, created_at) \
         SELECT 'd' || lpad(g::text, 8, '0'), 'e' || lpad(g::text, 8, '0'), \
         CASE WHEN g % 3 = 0 THEN 'send_receipt' ELSE 'reserve_stock' END, \
         CASE WHEN g % 100 = 0 THEN 'dead' WHEN g % 10 = 0 THEN 'pending' ELSE 'handled' END, \
         1, t, CASE WHEN g % 100 = 0 THEN 'mailer answered ' || (502 + g % 2) END, \
         CASE WHEN g % 10 = 0 AND g % 100 <> 0 THEN NULL ELSE t END, t \
         FROM (SELECT g, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' AS t \
         FROM generate_series(1, {n}) g) s; \
         INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, \
         current_node_id, revision, input, data, created_at, updated_at, owner) \
         SELECT '0190a000-0000-7000-8000-' || lpad(g::text, 12, '0'), 'checkout', '1', \
         CASE WHEN g % 100 = 0 THEN 'failed' WHEN g % 10 = 0 THEN 'waiting' ELSE 'completed' END, \
         'ship', 3, '{{}}', '{{}}', t, t, 'user:u' || (g % 1000) \
         FROM (SELECT g, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second' AS t \
         FROM generate_series(1, {n}) g) s"
    )
}

fn sqlite_seed(n: u64) -> String {
    const T0: u64 = 1_767_225_600_000;
    format!(
        "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {n}) \
         INSERT INTO jadpo_outbox (id, event_type, payload, chain_depth, source, created_at) \
         SELECT printf('e%08d', g), \
         CASE WHEN g % 2 = 0 THEN 'order.placed' ELSE 'order.paid' END, '{{\"n\": 1}}', 0, \
         'bench', {T0} + g * 1000 FROM s; \
         WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {n}) \
         INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, status, attempts, \
         next_attempt_at, last_failure, finished_at, created_at) \
         SELECT printf('d%08d', g), printf('e%08d', g), \
         CASE WHEN g % 3 = 0 THEN 'send_receipt' ELSE 'reserve_stock' END, \
         CASE WHEN g % 100 = 0 THEN 'dead' WHEN g % 10 = 0 THEN 'pending' ELSE 'handled' END, \
         1, {T0} + g * 1000, CASE WHEN g % 100 = 0 THEN 'mailer answered ' || (502 + g % 2) END, \
         CASE WHEN g % 10 = 0 AND g % 100 <> 0 THEN NULL ELSE {T0} + g * 1000 END, \
         {T0} + g * 1000 FROM s; \
         WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {n}) \
         INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, \
         current_node_id, revision, state_json, created_at, updated_at, owner) \
         SELECT printf('0190a000-0000-7000-8000-%012d', g), 'checkout', '1', \
         CASE WHEN g % 100 = 0 THEN 'failed' WHEN g % 10 = 0 THEN 'waiting' ELSE 'completed' END, \
         'ship', 3, '{{}}', {T0} + g * 1000, {T0} + g * 1000, 'user:u' || (g % 1000) FROM s"
    )
}

async fn seeded(store: Arc<dyn Store>, seed: &str) -> Console {
    let catalog = store.migration_catalog();
    migrate::apply(store.as_ref(), &catalog).await.unwrap_or_else(|e| panic!("{e}"));
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(seed).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    // One workflow, so that the store holds runs the console lists.
    let checkout = WorkflowDef::builder("checkout", "1", "ship")
        .node("ship", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let app = Application::builder("bench").store("main").workflow(checkout, "main").build();
    let engine = Engine {
        app: Arc::new(app.unwrap_or_else(|e| panic!("{e}"))),
        stores: [("main".to_owned(), store)].into_iter().collect(),
        queue: Arc::new(jadpo_runtime::queue::RelayLater),
        clock: Arc::new(SystemClock),
        connections: Arc::new(NoConnections),
        settings: EngineSettings::default(),
        runs: jadpo_engine::steps::RunEnv::ephemeral(),
        blobs: None,
        breakers_seen: Default::default(),
        key_sets: Default::default(),
    };
    let settings = ConsoleSettings {
        listen: "127.0.0.1:7070".parse().unwrap_or_else(|e| panic!("{e}")),
        no_login: true,
        hosts: Vec::new(),
        plain_http_on_network: false,
    };
    let operator = Operator::new("bench").unwrap_or_else(|e| panic!("{e}"));
    console(engine, operator, &settings).unwrap_or_else(|e| panic!("{e}"))
}

/// The median milliseconds of `path`, after warming up.
async fn median_ms(console: &Console, path: &str) -> f64 {
    let mut times = Vec::with_capacity(TIMED);
    for round in 0..WARM + TIMED {
        let request = Request::get(path)
            .header("host", "127.0.0.1:7070")
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        let response =
            console.router.clone().oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 8 << 20).await;
        let elapsed = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(status, StatusCode::OK, "{path}: {:?}", body.map(|b| b.len()));
        if round >= WARM {
            times.push(elapsed);
        }
    }
    times.sort_by(f64::total_cmp);
    times[TIMED / 2]
}

/// The pages measured: what each shows, and its path for a store of `n` deliveries.
fn pages(n: u64) -> Vec<(&'static str, String)> {
    let middle = n / 2 / 10 * 10 + 10; // a pending delivery half-way back
    let at = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .map(|t| t.to_utc() + chrono::Duration::seconds(i64::try_from(middle).unwrap_or(0)))
        .unwrap_or_else(|e| panic!("{e}"));
    let deep = format!(
        "/console/deliveries?store=main&status=pending&before_at={}&before_id=d{middle:08}",
        at.to_rfc3339().replace('+', "%2B")
    );
    vec![
        ("overview (counts capped at 10,000, dead groups)", "/console/".to_owned()),
        ("deliveries, newest page of 50", "/console/deliveries?store=main".to_owned()),
        (
            "dead, newest page of 50, with groups",
            "/console/deliveries?store=main&status=dead".to_owned(),
        ),
        ("pending, a page half-way back", deep),
        (
            "discarded (none), newest page",
            "/console/deliveries?store=main&status=discarded".to_owned(),
        ),
        (
            "one subscriber's, newest page",
            "/console/deliveries?store=main&subscriber=send_receipt".to_owned(),
        ),
        (
            "event type, newest page",
            "/console/deliveries?store=main&event_type=order.paid".to_owned(),
        ),
        ("one delivery", format!("/console/deliveries/d{:08}", n / 2)),
        ("runs, newest page of 50", "/console/runs?store=main".to_owned()),
        ("failed runs (1%), newest page", "/console/runs?store=main&status=failed".to_owned()),
        (
            "cancelled runs (none), newest page",
            "/console/runs?store=main&status=cancelled".to_owned(),
        ),
        (
            "waiting runs, a page half-way back",
            format!(
                "/console/runs?store=main&status=waiting&before=0190a000-0000-7000-8000-{:012}",
                middle
            ),
        ),
    ]
}

async fn measure(label: &str, small: &Console, large: &Console, out: &mut String) {
    for ((what, small_path), (_, large_path)) in pages(SMALL).into_iter().zip(pages(LARGE)) {
        let s = median_ms(small, &small_path).await;
        let l = median_ms(large, &large_path).await;
        eprintln!("{label} {what}: {s:.2} ms / {l:.2} ms");
        out.push_str(&format!("| {label} | {what} | {s:.2} | {l:.2} | {:.2}× |\n", l / s));
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut rows = String::new();
    let (pg_small, pg_large) = (PgTestDb::empty().await, PgTestDb::empty().await);
    let open = |db: &PgTestDb| -> Arc<dyn Store> {
        Arc::new(
            Postgres::connect("main", db.url(), &PgOptions::default())
                .unwrap_or_else(|e| panic!("{e}")),
        )
    };
    let t = Instant::now();
    let small = seeded(open(&pg_small), &pg_seed(SMALL)).await;
    let large = seeded(open(&pg_large), &pg_seed(LARGE)).await;
    // As autovacuum leaves a table at rest: statistics and the visibility map (VACUUM cannot
    // run in a transaction, so on a connection of its own).
    for db in [&pg_small, &pg_large] {
        let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        tokio::spawn(connection);
        client.batch_execute("VACUUM ANALYZE").await.unwrap_or_else(|e| panic!("{e}"));
    }
    eprintln!("PostgreSQL seeded in {:.1} s", t.elapsed().as_secs_f64());
    measure("PostgreSQL", &small, &large, &mut rows).await;

    let (lite_small, lite_large) = (SqliteTestDb::empty(), SqliteTestDb::empty());
    let t = Instant::now();
    let small = seeded(Arc::new(lite_small.store()), &sqlite_seed(SMALL)).await;
    let large = seeded(Arc::new(lite_large.store()), &sqlite_seed(LARGE)).await;
    for db in [&lite_small, &lite_large] {
        let store = db.store();
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        tx.batch("ANALYZE").await.unwrap_or_else(|e| panic!("{e}"));
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    }
    eprintln!("SQLite seeded in {:.1} s", t.elapsed().as_secs_f64());
    measure("SQLite", &small, &large, &mut rows).await;

    let report = format!(
        "## The operator console's pages\n\n`cargo bench -p jadpo-console --bench pages` (part of \
         `make bench`): the console's router (no network) over a store of {SMALL} and one of \
         {LARGE} deliveries (90% handled, 9% pending, 1% dead), each page requested {WARM} times \
         to warm up, then {TIMED}; the median. PostgreSQL: a throwaway cluster (or \
         DATABASE_URL), vacuumed and analyzed after seeding; SQLite: a file, analyzed. Each \
         page's statements run with plans made for their parameters (a status with no rows \
         must not cost a walk of the table). Lists are read by keyset from the `(created_at, id)` and \
         `(status, created_at, id)` indexes, runs by their time-ordered id (and `(status, \
         run_id)`); the overview's counts stop at 10,000 each (so they read at most 10,000 index \
         entries) and dead deliveries are grouped among the newest 1,000. The same number of \
         runs as deliveries is seeded (90% completed, 9% waiting, 1% failed).\n\n\
         | store | page | {SMALL} deliveries, ms | {LARGE}, ms | large / small |\n\
         |---|---|---|---|---|\n{rows}"
    );
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/console.md"), &report).unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
}
