//! Benchmark: Jadpo in the shapes `make bench-peers` runs its peers in, one shape per run, on
//! the PostgreSQL server `DATABASE_URL` names (a fresh database on it each run).
//!
//! * `e2e <seconds>`: Graphile Worker's steady shape — 8 producers each committing an action
//!   that emits one event (one transaction each) for `<seconds>`, 8 delivery workers each
//!   taking up to 64 queued messages, one subscriber that does nothing. Deliveries/s from the
//!   first commit to the last delivery, and commit return → subscriber start percentiles.
//! * `drain <jobs>`: Graphile Worker's drain shape — `<jobs>` events committed (8 producers)
//!   with nothing delivering them, then the backlog drained by 8 delivery workers taking up to
//!   64 queued messages each. Deliveries/s of the drain alone.
//! * `idle <count>`: one producer committing an event every 20 ms, each delivered before the
//!   next; commit return → subscriber start percentiles (the latency of an idle queue).
//! * `workflow <seconds>`: DBOS's two-step workflows — 8 producers starting runs of a workflow
//!   of two no-op steps for `<seconds>`, 8 workers running their commands. Completed runs/s.
//!
//! Prints one JSON line. `scripts/bench-peers/run.py` (`make bench-peers`) runs it between the
//! peers' own runs on one cluster; it is not part of `make bench` or `make test`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::{
    Load, Starts, Step, action_request, analyze, end_to_end, engine_on, runs_end_to_end,
    spawn_workers, started, step,
};
use jadpo_application::{
    Action, ActionOutput, Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_engine::Engine;
use jadpo_engine::commit::{CommitRequest, commit_unsent};
use jadpo_engine::relay::enqueue_now;
use jadpo_local::queue::InProcessQueue;
use jadpo_test_harness::PgTestDb;
use jadpo_workflow::def::{Node, WorkflowDef};
use serde_json::{Value, json};

/// Producers and workers, as the peers run them.
const CLIENTS: usize = 8;
/// Most messages a delivery worker takes at once, as `jadpo-local`'s default.
const BATCH: usize = 64;

/// Emits one event and writes nothing else: the counterpart of adding a job.
struct Enqueue;

#[async_trait]
impl Action for Enqueue {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        _: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let id = ctx.new_id();
        ctx.emit("job.added", json!({"order_id": id}));
        Ok(ActionOutput::created(json!({"order_id": id})))
    }
}

/// Notes when it started and does nothing: the counterpart of a no-op task.
struct Noop(Starts);

#[async_trait]
impl Subscriber for Noop {
    async fn handle(&self, _: &mut HandlerContext<'_>, event: &Event) -> Result<(), HandlerError> {
        started(&self.0, event.payload["order_id"].as_str().unwrap_or_default(), "noop");
        Ok(())
    }
}

fn app(starts: &Starts) -> Application {
    let two = WorkflowDef::builder("two", "1", "a")
        .node("a", step("b"))
        .node("b", step("done"))
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Application::builder("peers")
        .store("main")
        .event("job.added")
        .action("enqueue", "main", Enqueue)
        .subscriber("noop", "job.added", "main", RetryPolicy::default(), Noop(Arc::clone(starts)))
        .workflow(two, "main")
        .capability("step", Step)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn request(i: usize) -> CommitRequest {
    action_request("enqueue", json!({}), i)
}

/// Commits `jobs` events from [`CLIENTS`] producers with nothing delivering them, then drains
/// the backlog with [`CLIENTS`] workers: the deliveries and deliveries/s of the drain alone.
async fn drain(base: &Engine, jobs: usize) -> (usize, f64) {
    let (queue, rx) = InProcessQueue::new();
    let mut engine = base.clone();
    engine.queue = Arc::new(queue);
    let producers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let engine = engine.clone();
            let share = jobs / CLIENTS + usize::from(c < jobs % CLIENTS);
            tokio::spawn(async move {
                for _ in 0..share {
                    let outcome =
                        commit_unsent(&engine, request(c)).await.unwrap_or_else(|e| panic!("{e}"));
                    enqueue_now(&engine, &outcome.store, &outcome.deliveries).await;
                }
            })
        })
        .collect();
    for t in producers {
        t.await.unwrap_or_else(|e| panic!("a producer failed: {e}"));
    }
    analyze(&engine).await;
    let start = Instant::now();
    let (elapsed, handled) = spawn_workers(&engine, rx, CLIENTS, BATCH).finish(start).await;
    assert_eq!(handled, jobs, "every delivery handled once");
    (handled, handled as f64 / elapsed.as_secs_f64())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` adds `--bench`; the shape and length are the other arguments.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let usage = "usage: cargo bench -p jadpo-runtime --bench peers -- \
                 (e2e <seconds>|drain <jobs>|idle <count>|workflow <seconds>)";
    let shape = args.first().map(String::as_str).unwrap_or_else(|| panic!("{usage}"));
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let starts: Starts = Arc::default();
    let db = PgTestDb::empty().await;
    let engine = engine_on(app(&starts), db.url()).await;
    let load = Load::For(Duration::from_secs(seconds));
    let line = match shape {
        "e2e" => {
            // A short warm-up, as the peers' own first jobs warm their pools.
            let warm = Load::Count { per_client: 20, pace: None };
            end_to_end(&engine, &starts, CLIENTS, warm, BATCH, 1, request).await;
            analyze(&engine).await;
            let r = end_to_end(&engine, &starts, CLIENTS, load, BATCH, 1, request).await;
            json!({"peer": "jadpo", "shape": "e2e", "deliveries": r.deliveries,
                   "deliveries_per_s": r.per_s, "p50_ms": r.p50_ms, "p99_ms": r.p99_ms})
        }
        "drain" => {
            let jobs = usize::try_from(seconds).unwrap_or(usize::MAX);
            let (deliveries, per_s) = drain(&engine, jobs).await;
            json!({"peer": "jadpo", "shape": "drain", "deliveries": deliveries,
                   "deliveries_per_s": per_s})
        }
        "idle" => {
            let count = usize::try_from(seconds).unwrap_or(usize::MAX);
            let warm = Load::Count { per_client: 20, pace: None };
            end_to_end(&engine, &starts, 1, warm, BATCH, 1, request).await;
            let idle = Load::Count { per_client: count, pace: Some(Duration::from_millis(20)) };
            let r = end_to_end(&engine, &starts, 1, idle, BATCH, 1, request).await;
            json!({"peer": "jadpo", "shape": "idle", "deliveries": r.deliveries,
                   "p50_ms": r.p50_ms, "p99_ms": r.p99_ms})
        }
        "workflow" => {
            let warm = Load::Count { per_client: 20, pace: None };
            runs_end_to_end(&engine, CLIENTS, "two", 2, warm).await;
            analyze(&engine).await;
            let (runs, per_s) = runs_end_to_end(&engine, CLIENTS, "two", 2, load).await;
            json!({"peer": "jadpo", "shape": "workflow", "runs": runs, "runs_per_s": per_s})
        }
        other => panic!("unknown shape {other:?}; {usage}"),
    };
    println!("{line}");
}
