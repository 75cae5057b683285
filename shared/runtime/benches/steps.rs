//! Benchmark: what recorded calls cost a delivery, on PostgreSQL.
//!
//! Three subscribers that differ only in their changing calls — none, one, two — each followed
//! by the same one-row write. Each call goes over HTTP to the local sink (in this process, on
//! loopback, answering at once), so what is measured is the runtime's cost per recorded step
//! (take the run's lease, record the step sent, seal and record the answer, finish the record
//! with the handler's transaction) plus one loopback round trip, not a provider's latency.
//!
//! Orders are committed first; the measured phase is the delivery of their events alone, by as
//! many workers as clients. The three kinds alternate round by round; each cell is the median
//! round. `make bench` runs it and assembles BENCHMARKS.md.

mod common;

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jadpo_application::{
    Action, ActionOutput, Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::Dialect;
use jadpo_core::ports::ConnectionRequest;
use jadpo_engine::Engine;
use jadpo_engine::commit::{CommitRequest, commit_unsent};
use jadpo_engine::relay::enqueue_now;
use jadpo_local::queue::InProcessQueue;
use jadpo_local::sink::{self, Sinks};
use jadpo_runtime::connections::HttpConnections;
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_harness::PgTestDb;
use serde_json::{Value, json};

use common::{action_request, analyze, engine_on, spawn_workers};

const ROUNDS: usize = 5;
const DELIVERIES: usize = 600;
const TABLES: &str = "CREATE TABLE bench_effects (order_id TEXT NOT NULL, subscriber TEXT NOT NULL, \
    PRIMARY KEY (order_id, subscriber))";
/// The subscribers, by how many changing calls each makes.
const KINDS: [(&str, usize); 3] = [("no call", 0), ("one call", 1), ("two calls", 2)];

/// Emits the event of the subscriber asked for.
struct Place;

#[async_trait]
impl Action for Place {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let id = ctx.new_id();
        let calls = input["calls"].as_u64().unwrap_or_default();
        ctx.emit(&format!("calls.{calls}"), json!({"order_id": id}));
        Ok(ActionOutput::created(json!({"order_id": id})))
    }
}

/// Makes `.0` changing calls (a charge, then a receipt), then writes its effect.
struct Calls(usize);

#[async_trait]
impl Subscriber for Calls {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let order = event.payload["order_id"].as_str().unwrap_or_default().to_owned();
        for (step, path) in ["/charges", "/receipts"].into_iter().take(self.0).enumerate() {
            ctx.call("provider", path, json!({"order_id": order, "step": step})).await?;
        }
        ctx.tx()
            .await?
            .execute(
                "INSERT INTO bench_effects (order_id, subscriber) VALUES ($1, $2)",
                &[order.into(), format!("calls.{}", self.0).into()],
            )
            .await?;
        Ok(())
    }
}

fn app() -> Application {
    let m = vec![Migration::new(Ledger::Workflow, 5, "bench", TABLES)];
    let mut builder = Application::builder("bench")
        .store("main")
        .connection("provider")
        .action("place", "main", Place);
    for (_, calls) in KINDS {
        let event = format!("calls.{calls}");
        let (name, retry) = (format!("sub{calls}"), RetryPolicy::default());
        builder = builder.event(&event);
        // A subscriber that calls out declares its connection, as the shop's do: it runs alone
        // (its calls made with no transaction open), behind the connection's breaker.
        builder = match calls {
            0 => builder.subscriber(&name, &event, "main", retry, Calls(calls)),
            _ => builder.subscriber_via(&name, &event, "main", retry, "provider", Calls(calls)),
        };
    }
    builder.migrations("main", Dialect::Postgres, m).build().unwrap_or_else(|e| panic!("{e}"))
}

fn request(calls: usize) -> CommitRequest {
    action_request("place", json!({"calls": calls}), calls)
}

/// The local sink on a free port, as the connection `provider`.
async fn provider() -> HttpConnections {
    let listener =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(axum::serve(listener, sink::router(Sinks::default())).into_future());
    let base =
        url::Url::parse(&format!("http://{addr}/sink/provider")).unwrap_or_else(|e| panic!("{e}"));
    let bases: BTreeMap<String, url::Url> = [("provider".to_owned(), base)].into_iter().collect();
    HttpConnections::new(bases, Duration::from_secs(5)).unwrap_or_else(|e| panic!("{e}"))
}

/// Deliveries/s of `DELIVERIES` events for the subscriber making `calls` calls, by `workers`
/// taking up to `batch` messages each.
async fn deliveries_per_s(base: &Engine, calls: usize, workers: usize, batch: usize) -> f64 {
    let (queue, rx) = InProcessQueue::new();
    let mut engine = base.clone();
    engine.queue = Arc::new(queue);
    for _ in 0..DELIVERIES {
        let outcome =
            commit_unsent(&engine, request(calls)).await.unwrap_or_else(|e| panic!("{e}"));
        enqueue_now(&engine, &outcome.store, &outcome.deliveries).await;
    }
    analyze(&engine).await;
    let start = Instant::now();
    let (elapsed, handled) = spawn_workers(&engine, rx, workers, batch).finish(start).await;
    assert_eq!(handled, DELIVERIES, "every delivery handled once");
    DELIVERIES as f64 / elapsed.as_secs_f64()
}

/// Bare calls/s to the provider (the same loopback call a step makes, nothing recorded), from
/// `workers` tasks sharing `DELIVERIES` calls.
async fn calls_per_s(engine: &Engine, workers: usize) -> f64 {
    let start = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let connections = Arc::clone(&engine.connections);
            tokio::spawn(async move {
                for i in (w..DELIVERIES).step_by(workers) {
                    let request = ConnectionRequest {
                        connection: "provider".to_owned(),
                        path: "/charges".to_owned(),
                        body: json!({"order_id": format!("bare-{i}"), "step": 0}),
                        idempotency_key: Some(format!("bare-{i}")),
                    };
                    connections.call(request).await.unwrap_or_else(|e| panic!("{e}"));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap_or_else(|e| panic!("{e}"));
    }
    DELIVERIES as f64 / start.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let db = PgTestDb::empty().await;
    let mut engine = engine_on(app(), db.url()).await;
    engine.connections = Arc::new(provider().await);
    let mut out = format!(
        "## Recorded calls on PostgreSQL\n\n`cargo bench -p jadpo-runtime --bench steps` (part of `make bench`): a throwaway \
         PostgreSQL 15 cluster (fsync off), 2 cores shared by client, server and the provider. Three subscribers \
         differing only in their changing calls (none, one, two), each then writing one row; each call a \
         recorded step sent over HTTP to the local sink on loopback, which answers at once (so a provider's \
         own latency is left out). {DELIVERIES} orders are committed first; the delivery of their events \
         alone is timed, by as many workers as clients. Kinds alternate round by round; median of \
         {ROUNDS} rounds.\n\n\
         | workers × batch | no call deliveries/s | one call | two calls | ms per delivery: none / one / two | the call alone ms | one / none (time) | one less its call / none | two / one (time) | a step's cost ms |\n\
         |---|---|---|---|---|---|---|---|---|---|\n"
    );
    // One message at a time, and as jadpo-local takes them (up to 64, the calls of a batch's
    // deliveries made side by side).
    for (workers, batch) in [(1, 1), (8, 1), (8, 64)] {
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); KINDS.len()];
        let mut calls = Vec::new();
        for round in 0..ROUNDS {
            for k in 0..KINDS.len() {
                let kind = (k + round) % KINDS.len();
                let rate = deliveries_per_s(&engine, KINDS[kind].1, workers, batch).await;
                rates[kind].push(rate);
            }
            calls.push(calls_per_s(&engine, workers).await);
        }
        let [none, one, two] = [0, 1, 2].map(|k| median(rates[k].clone()));
        let ms = |rate: f64| 1000.0 * workers as f64 / rate;
        let call = ms(median(calls));
        out.push_str(&format!(
            "| {workers} × {batch} | {none:.0} | {one:.0} | {two:.0} | {:.2} / {:.2} / {:.2} | {call:.2} | {:.2}× | {:.2}× | {:.2}× | {:.2} |\n",
            ms(none),
            ms(one),
            ms(two),
            ms(one) / ms(none),
            (ms(one) - call) / ms(none),
            ms(two) / ms(one),
            ms(two) - ms(one),
        ));
    }
    out.push_str(&format!(
        "\n\"ms per delivery\" is workers / (deliveries/s): the time one worker spends on a delivery. \
         \"The call alone\" is the same loopback call made bare ({DELIVERIES} of them from as many \
         tasks as workers, no step recorded), in the same rounds; \"one less its call / none\" takes it \
         from the one-call delivery's time. \"A step's cost\" is the two-call delivery's time less the one-call's: one more recorded step \
         (its sent row, its sealed answer, one loopback call). Runs: {} kinds × {ROUNDS} rounds × {DELIVERIES} deliveries per worker count.\n",
        KINDS.len()
    ));
    print!("{out}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/steps.md"), out).unwrap_or_else(|e| panic!("{e}"));
}
