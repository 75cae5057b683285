//! Benchmark: the commit path and the pipeline end to end on PostgreSQL, against a ceiling.
//!
//! * **Ceiling**: the commit transaction's own statements (order, outbox row, two deliveries,
//!   in one transaction) as a pgbench script — transactions/s.
//! * **Commit path**: `jadpo_engine::commit::commit` through the real action (no HTTP) —
//!   actions/s, and its ratio to the ceiling.
//! * **End to end**: commit, then the in-process queue and the delivery use case until every
//!   delivery is handled — events/s, and latency from a commit's return to its subscriber's start.
//! * **End to end bound**: the end to end path's statements as a pgbench script, batched as well
//!   as the path ever batches them — the most the path could reach on this machine, so that a
//!   target it cannot reach is shown unreachable by a measurement, not argued.
//!
//! Each at concurrency 1 and 8, in one run, on one throwaway cluster (fsync off: the numbers
//! compare code paths, not disks). `make bench` runs it and assembles BENCHMARKS.md.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jadpo_application::{
    Action, ActionOutput, Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::{Dialect, SystemClock};
use jadpo_engine::Engine;
use jadpo_engine::commit::{CommitRequest, commit_unsent};
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_harness::PgTestDb;
use serde_json::{Value, json};

const SECONDS: u64 = 6;
/// Most messages a delivery worker takes at once, as `jadpo-local`'s default.
const BATCH: usize = 64;
const ORDERS: &str = "CREATE TABLE bench_orders (id TEXT PRIMARY KEY, customer TEXT NOT NULL, \
    items JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL); \
    CREATE TABLE bench_effects (order_id TEXT NOT NULL, subscriber TEXT NOT NULL, \
    PRIMARY KEY (order_id, subscriber))";

struct Place;

#[async_trait]
impl Action for Place {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let id = ctx.new_id();
        let now = ctx.now();
        ctx.tx()
            .await?
            .execute(
                "INSERT INTO bench_orders (id, customer, items, created_at) VALUES ($1, $2, $3, $4)",
                &[id.as_str().into(), "c1".into(), jadpo_core::SqlValue::Json(input["items"].clone()), now.into()],
            )
            .await?;
        ctx.emit("order.placed", json!({"order_id": id, "items": input["items"]}));
        Ok(ActionOutput::created(json!({"order_id": id})))
    }
}

struct Effect(&'static str, Starts);

#[async_trait]
impl Subscriber for Effect {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let order = event.payload["order_id"].as_str().unwrap_or_default().to_owned();
        started(&self.1, &order, self.0);
        ctx.tx()
            .await?
            .execute(
                "INSERT INTO bench_effects (order_id, subscriber) VALUES ($1, $2)",
                &[order.into(), self.0.into()],
            )
            .await?;
        Ok(())
    }
}

fn app(starts: &Starts) -> Application {
    let m = vec![Migration::new(Ledger::Workflow, 5, "bench", ORDERS)];
    Application::builder("bench")
        .store("main")
        .event("order.placed")
        .action("place", "main", Place)
        .subscriber(
            "reserve",
            "order.placed",
            "main",
            RetryPolicy::default(),
            Effect("reserve", Arc::clone(starts)),
        )
        .subscriber(
            "receipt",
            "order.placed",
            "main",
            RetryPolicy::default(),
            Effect("receipt", Arc::clone(starts)),
        )
        .migrations("main", Dialect::Postgres, m)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn request(i: usize) -> CommitRequest {
    action_request("place", json!({"items": [{"sku": "A", "qty": 1}]}), i)
}

/// A request with an idempotency key of its own, as a client retrying safely sends it.
fn keyed(i: usize) -> CommitRequest {
    let key = jadpo_core::id::new_id(&SystemClock).to_string();
    CommitRequest { idempotency_key: Some(key), request_digest: "d".into(), ..request(i) }
}

/// The commit transaction's statements, exactly as the PostgreSQL adapter sends them.
const PGBENCH_SCRIPT: &str = r#"\set n random(1, 9000000000000000000)
BEGIN;
INSERT INTO bench_orders (id, customer, items, created_at) VALUES ('o' || :n || ':' || :client_id, 'c1', '[{"sku":"A","qty":1}]', now());
INSERT INTO jadpo_outbox (id, event_type, payload, encoding, traceparent, tracestate, chain_depth, source, request_id, created_at) VALUES ('e' || :n || ':' || :client_id, 'order.placed', '{"order_id":"x","items":[{"sku":"A","qty":1}]}', 1, NULL, NULL, 0, 'place', '1', now());
INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, next_attempt_at, created_at) SELECT d->>'id', ('e' || :n || ':' || :client_id)::text, d->>'subscriber', now()::timestamptz, now()::timestamptz FROM jsonb_array_elements(('[{"id":"d1' || :n || ':' || :client_id || '","subscriber":"reserve"},{"id":"d2' || :n || ':' || :client_id || '","subscriber":"receipt"}]')::jsonb) AS d;
COMMIT;
"#;

/// Orders per execution of the end to end bound: 32 orders' 64 deliveries fill one batch of
/// [`BATCH`] messages, the most the path ever groups.
const BOUND_ORDERS: usize = BATCH / 2;

/// The end to end path's statements, bare, at the best batching the path can reach: `orders`
/// commits (each the ceiling's transaction), one mark of all their deliveries as sent, then one
/// delivery batch over those deliveries as the batch path sends it (load all; begin, the handled
/// records in one statement, each subscriber's write, the outcomes in one statement, commit).
/// Each execution is `orders` orders, `2 × orders` events.
fn e2e_bound_script(orders: usize) -> String {
    let id = |prefix: &str, i: usize| format!("'{prefix}' || :n || ':' || :client_id || ':{i}'");
    let json = |items: &[String]| format!("('[' || {} || ']')", items.join(" || ',' || "));
    let quoted = |prefix: &str, i: usize| format!("'\"' || {} || '\"'", id(prefix, i));
    let mut script = String::from("\\set n random(1, 9000000000000000000)\n");
    let (mut ids, mut pairs) = (Vec::new(), Vec::new());
    // The ceiling's transaction as it is, each order's ids told apart by its number.
    let commit = PGBENCH_SCRIPT.split_once('\n').map_or("", |(_set, rest)| rest);
    for i in 0..orders {
        script.push_str(&commit.replace(":client_id", &format!(":client_id || ':{i}'")));
        for (d, subscriber) in [("d1", "reserve"), ("d2", "receipt")] {
            ids.push(quoted(d, i));
            pairs.push(format!(
                "'{{\"id\":\"' || {} || '\",\"subscriber\":\"{subscriber}\"}}'",
                id(d, i)
            ));
        }
    }
    let (ids, pairs) = (json(&ids), json(&pairs));
    script.push_str(&format!(
        "UPDATE jadpo_deliveries SET enqueued_at = now() FROM (SELECT set_config('synchronous_commit', 'off', true)) AS advisory WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text({ids}::jsonb))) AND status = 'pending' AND attempts = 0 AND enqueued_at IS NULL;\n\
         SELECT d.id, d.subscriber, d.status, d.attempts, d.next_attempt_at, d.enqueued_at, d.last_attempt_at, d.last_failure, d.finished_at, d.created_at, o.id AS outbox_id, o.event_type, o.payload, o.chain_depth, o.created_at AS event_created_at, o.encoding AS payload_encoding, o.traceparent, o.tracestate, d.held_connection, d.held_at FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = ANY(ARRAY(SELECT jsonb_array_elements_text({ids}::jsonb)));\n\
         BEGIN;\n\
         INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) SELECT d->>'id', d->>'subscriber', now()::timestamptz FROM jsonb_array_elements({pairs}::jsonb) AS d ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id;\n"
    ));
    for i in 0..orders {
        for subscriber in ["reserve", "receipt"] {
            script.push_str(&format!(
                "INSERT INTO bench_effects (order_id, subscriber) VALUES ({}, '{subscriber}');\n",
                id("o", i)
            ));
        }
    }
    script.push_str(&format!(
        "UPDATE jadpo_deliveries SET status = 'handled', attempts = attempts + 1, last_attempt_at = now(), finished_at = now(), enqueued_at = NULL WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text({ids}::jsonb))) AND status = 'pending';\n\
         COMMIT;\n"
    ));
    script
}

use common::{
    Load, Starts, action_request, analyze, cpu_seconds, end_to_end, engine_on, pgbench_tps, started,
};

async fn commit_rate(
    engine: &Engine,
    clients: usize,
    request: fn(usize) -> CommitRequest,
) -> (f64, f64) {
    let cpu_before = cpu_seconds();
    let stop = Instant::now() + Duration::from_secs(SECONDS);
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let mut n = 0_usize;
                while Instant::now() < stop {
                    commit_unsent(&engine, request(c)).await.unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                }
                n
            })
        })
        .collect();
    let start = Instant::now();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or_else(|e| panic!("a client failed: {e}"));
    }
    let wall = start.elapsed().as_secs_f64();
    (total as f64 / wall, (cpu_seconds() - cpu_before) / wall)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let starts: Starts = Arc::default();
    let app = app(&starts);
    let db = PgTestDb::empty().await;
    let engine = engine_on(app, db.url()).await;
    if let Ok(rows) = std::env::var("BENCH_HISTORY_ROWS") {
        let rows = rows.parse().unwrap_or_else(|e| panic!("BENCH_HISTORY_ROWS={rows}: {e}"));
        at_scale(&engine, &starts, db.url(), rows).await;
        return;
    }
    let mut rows = Vec::new();
    for clients in [1, 8] {
        let ceiling = pgbench_tps(db.url(), PGBENCH_SCRIPT, clients, SECONDS);
        // Only where the server is saturated: one client's script runs its orders one after
        // another and is bound by round trips, where the path overlaps commits and deliveries.
        let bound = (clients > 1).then(|| {
            // Twice the clients: the path runs as many committers as workers, each on its own
            // connection.
            let script = e2e_bound_script(BOUND_ORDERS);
            pgbench_tps(db.url(), &script, 2 * clients, SECONDS) * 2.0 * BOUND_ORDERS as f64
        });
        analyze(&engine).await;
        let (committed, client_cores) = commit_rate(&engine, clients, request).await;
        analyze(&engine).await;
        let unpaced = Load::Count { per_client: 4_000 / clients, pace: None };
        let throughput = end_to_end(&engine, &starts, clients, unpaced, BATCH, 2, request).await;
        analyze(&engine).await;
        let pace = Some(Duration::from_millis(5 * clients as u64));
        let moderate = Load::Count { per_client: 800 / clients, pace };
        let paced = end_to_end(&engine, &starts, clients, moderate, BATCH, 2, request).await;
        rows.push((clients, ceiling, committed, client_cores, throughput, paced, bound));
    }
    let mut out = String::from(
        "## The event pipeline on PostgreSQL\n\n`cargo bench -p jadpo-runtime --bench pipeline` (part of `make bench`): a throwaway \
         PostgreSQL 15 cluster (fsync off), 2 cores, client and server on the same machine. Ceiling: the commit \
         transaction's statements as a pgbench script (`-M prepared`). Commit path: `engine::commit` through the \
         real action, no HTTP. End to end: commit, in-process queue and `engine::dispatch_many` for two \
         subscribers, as many workers as clients, each taking up to 64 queued messages at once; throughput with 4,000 orders unpaced (events/s, each order is \
         two events; compared with the commit path's actions/s × 2), latency with 800 orders at about 200 \
         orders/s (moderate load), from a commit's return to its subscriber's start. Statistics are \
         refreshed (`ANALYZE`) between phases, as autovacuum would in steady state.\n\n\
         | clients | ceiling tx/s | commit actions/s | commit / ceiling | client cores used | e2e events/s | e2e / (2 × commit) | e2e bound events/s | bound / (2 × ceiling) | e2e / bound | p50 ms (moderate) | p99 ms (moderate) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (clients, ceiling, committed, client_cores, throughput, paced, bound) in &rows {
        let bound = match bound {
            Some(b) => {
                format!("{b:.0} | {:.2}× | {:.2}×", b / (2.0 * ceiling), throughput.per_s / b)
            }
            None => "— | — | —".to_owned(),
        };
        out.push_str(&format!(
            "| {clients} | {ceiling:.0} | {committed:.0} | {:.2}× | {client_cores:.2} | {:.0} | {:.2}× | {bound} | {:.2} | {:.2} |\n",
            committed / ceiling,
            throughput.per_s,
            throughput.per_s / (2.0 * committed),
            paced.p50_ms,
            paced.p99_ms
        ));
    }
    out.push_str(
        "\n\"client cores used\" is this process's CPU time over the commit-path run's wall time (from \
         /proc/self/stat): the benchmark client and PostgreSQL share the machine's two cores, so every \
         core-second the client spends (tokio, the pool, JSON and id generation) is taken from the server, \
         where pgbench's C client costs almost nothing. At one client the commit path is bound by round \
         trips (5 per commit, as in the script) and stays near the ceiling; at eight clients the server is \
         CPU-bound and the client's share shows up as the gap. End to end, each order is two deliveries; \
         alone, a delivery is six round trips (load; the subscriber's transaction: begin, handled record, \
         its write, commit; outcome); a batch of n deliveries whose subscribers write to the store that holds \
         them is n + 5 (load all; begin, all handled records in one statement, each subscriber's write, \
         all outcomes in one statement, commit), on the same two cores.\n\n\
         \"e2e bound\" is the end to end path's statements run bare, as a pgbench script, at the best \
         batching the path can reach: 32 orders' commit transactions (the ceiling's), one mark of their \
         64 deliveries as sent, then one delivery batch over those 64 (load all; begin, the handled \
         records in one statement, each subscriber's write, the outcomes in one statement, commit); each \
         execution is 64 events, and it runs on twice the clients (the path's committers and its \
         workers, each on a connection of its own). \"bound / (2 × ceiling)\" is the target's ratio (end to end over twice \
         the commit rate) with both sides bare: where it is below 0.8, these statements cannot reach \
         0.8× on this machine however the path sends them. \"e2e / bound\" is how near the path comes \
         to its own statements run bare. It is measured at eight clients only: at one, the script \
         runs its orders one after another and is bound by round trips, not by the machine, while \
         the path overlaps its commits with its deliveries.\n",
    );
    print!("{out}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/pipeline.md"), out).unwrap_or_else(|e| panic!("{e}"));
}

/// The same statements at scale (issue 17's P6): the commit path (with idempotency keys) and end
/// to end at 8 clients on empty tables, then again once `rows` historical rows are in each of the
/// outbox, deliveries, handled and idempotency tables. Run by hand:
/// `BENCH_HISTORY_ROWS=10000000 cargo bench -p jadpo-runtime --bench pipeline`; writes
/// `target/bench/pipeline-scale.md`.
async fn at_scale(engine: &Engine, starts: &Starts, url: &str, rows: u64) {
    // A first round warms the new cluster's caches and plans; it is not reported.
    scale_round(engine, starts).await;
    let empty = scale_round(engine, starts).await;
    let filling = Instant::now();
    fill_history(url, rows);
    let filled = filling.elapsed().as_secs_f64();
    let full = scale_round(engine, starts).await;
    let mut out = format!(
        "## The pipeline with {rows} historical rows\n\n`BENCH_HISTORY_ROWS={rows} cargo bench -p jadpo-runtime \
         --bench pipeline`: 8 clients, commits with idempotency keys; first on empty tables, then after {rows} rows \
         were put in each of `jadpo_outbox`, `jadpo_deliveries` (handled), `jadpo_handled_deliveries` and \
         `jadpo_idempotency_keys` (live keys) and `VACUUM ANALYZE` ({filled:.0} s).\n\n\
         | tables | commit actions/s | e2e events/s | p50 ms | p99 ms |\n|---|---|---|---|---|\n"
    );
    for (name, (committed, e2e)) in [("empty", &empty), ("with history", &full)] {
        out.push_str(&format!(
            "| {name} | {committed:.0} | {:.0} | {:.2} | {:.2} |\n",
            e2e.per_s, e2e.p50_ms, e2e.p99_ms
        ));
    }
    out.push_str(&format!(
        "\nWith history / empty: commit {:.2}×, end to end {:.2}×.\n",
        full.0 / empty.0,
        full.1.per_s / empty.1.per_s
    ));
    print!("{out}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/pipeline-scale.md"), out).unwrap_or_else(|e| panic!("{e}"));
}

/// Keyed commits for `SECONDS`, then 4,000 keyed orders end to end, at 8 clients.
async fn scale_round(engine: &Engine, starts: &Starts) -> (f64, common::EndToEnd) {
    analyze(engine).await;
    let (committed, _) = commit_rate(engine, 8, keyed).await;
    analyze(engine).await;
    let load = Load::Count { per_client: 500, pace: None };
    (committed, end_to_end(engine, starts, 8, load, BATCH, 2, keyed).await)
}

/// `rows` finished events from two days ago: outbox rows, their handled deliveries and handled
/// records, and as many idempotency keys still live.
fn fill_history(url: &str, rows: u64) {
    let ts = "now() - interval '2 days' + g * interval '1 ms'";
    common::psql(
        url,
        &format!(
            "INSERT INTO jadpo_outbox (id, event_type, payload, encoding, chain_depth, source, \
             request_id, created_at) SELECT 'h' || g, 'order.placed', \
             '{{\"order_id\":\"h\",\"items\":[{{\"sku\":\"A\",\"qty\":1}}]}}', 1, 0, 'place', g::text, {ts} \
             FROM generate_series(1, {rows}) g"
        ),
    );
    common::psql(
        url,
        &format!(
            "INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, status, attempts, \
             next_attempt_at, last_attempt_at, finished_at, created_at) SELECT 'hd' || g, 'h' || g, \
             'reserve', 'handled', 1, {ts}, {ts}, {ts}, {ts} FROM generate_series(1, {rows}) g"
        ),
    );
    common::psql(
        url,
        &format!(
            "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
             SELECT 'hd' || g, 'reserve', {ts} FROM generate_series(1, {rows}) g"
        ),
    );
    common::psql(
        url,
        &format!(
            "INSERT INTO jadpo_idempotency_keys (scope, key, request_digest, response_status, \
             response_body, created_at, expires_at) SELECT 'place', 'h' || g, 'd', 201, \
             '{{\"order_id\":\"h\"}}', now() - interval '1 hour', now() + interval '23 hours' \
             FROM generate_series(1, {rows}) g"
        ),
    );
    common::psql(url, "VACUUM ANALYZE");
}
