//! Benchmark: workflow transitions through `commit_transition` on PostgreSQL against a plain-SQL
//! ceiling of the same statements, and runs/s of a three-step workflow end to end with the
//! in-process queue. Concurrency 1 and 8, in one run, on one throwaway cluster (fsync off).
//! `make bench` runs it and assembles BENCHMARKS.md.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::{analyze, cpu_seconds, pgbench_tps};
use jadpo_core::app::{Application, Capability, CapabilityContext, CommandRequest, HandlerError};
use jadpo_core::model::workflow::def::{Node, WorkflowDef};
use jadpo_core::model::workflow::kernel::{Incoming, decide};
use jadpo_core::model::workflow::rows::TransitionWrite;
use jadpo_core::ports::NoConnections;
use jadpo_core::{Store, SystemClock};
use jadpo_engine::dispatch::dispatch;
use jadpo_engine::migrate;
use jadpo_engine::workflow::runs::start_run;
use jadpo_engine::{Engine, EngineSettings};
use jadpo_local::queue::InProcessQueue;
use jadpo_runtime::catalog_for;
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_test_harness::PgTestDb;
use serde_json::{Value, json};
use tokio::sync::Mutex as AsyncMutex;

const SECONDS: u64 = 6;

struct Step;

#[async_trait]
impl Capability for Step {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        c: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        Ok(json!({"node": c.node_id}))
    }
}

fn step(next: &str) -> Node {
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

fn three_steps() -> WorkflowDef {
    WorkflowDef::builder("three", "1", "a")
        .node("a", step("b"))
        .node("b", step("c"))
        .node("c", step("done"))
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A start transition's statements, as the PostgreSQL adapter sends them: lock/read the
/// revision, insert the execution, three events, one command.
const CEILING: &str = r#"\set n random(1, 9000000000000000000)
BEGIN;
SELECT revision FROM workflow_executions WHERE run_id = 'r' || :n || ':' || :client_id FOR UPDATE;
INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, current_node_id, revision, input, data, error, cancellation_state, loop_state, created_at, updated_at) VALUES ('r' || :n || ':' || :client_id, 'three', '1', 'running', 'a', 3, '{}', '{}', NULL, NULL, NULL, now(), now());
INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) VALUES ('r' || :n || ':' || :client_id || ':1', 'r' || :n || ':' || :client_id, 1, 'run.started', '{"workflow_id":"three","workflow_version":"1","input":{}}', 1);
INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) VALUES ('r' || :n || ':' || :client_id || ':2', 'r' || :n || ':' || :client_id, 2, 'node.entered', '{"node":"a","kind":"step"}', 1);
INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) VALUES ('r' || :n || ':' || :client_id || ':3', 'r' || :n || ':' || :client_id, 3, 'command.issued', '{"command_id":"x","node":"a","capability":"step","payload":{},"compensation": false}', 1);
INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, idempotency_key, created_at) VALUES ('r' || :n || ':' || :client_id || '-cmd-3', 'r' || :n || ':' || :client_id, 3, 'a', 'step', '{"input":{}}', 'k', now());
COMMIT;
"#;

async fn transitions(store: &Arc<dyn Store>, clients: usize) -> (f64, f64) {
    let def = Arc::new(three_steps());
    let stop = Instant::now() + Duration::from_secs(SECONDS);
    let cpu = cpu_seconds();
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (store, def) = (Arc::clone(store), Arc::clone(&def));
            tokio::spawn(async move {
                let mut n = 0_usize;
                while Instant::now() < stop {
                    let run = format!("t{c}-{n}-{}", std::process::id());
                    let t = decide(&def, None, &Incoming::Start { input: json!({}) }, &run, 1_000)
                        .unwrap_or_else(|e| panic!("{e}"));
                    let write = TransitionWrite {
                        owner: None,
                        actor: None,
                        run_id: &run,
                        expected_revision: None,
                        transition: &t,
                        session: None,
                        lease: None,
                    };
                    store.commit_transition(&write).await.unwrap_or_else(|e| panic!("{e}"));
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or(0);
    }
    let wall = start.elapsed().as_secs_f64();
    (total as f64 / wall, (cpu_seconds() - cpu) / wall)
}

async fn runs_end_to_end(base: &Engine, clients: usize, runs: usize) -> f64 {
    let (queue, rx) = InProcessQueue::new();
    let mut p = base.clone();
    p.queue = Arc::new(queue);
    let rx = Arc::new(AsyncMutex::new(rx));
    let commands = Arc::new(AtomicUsize::new(0));
    let expected = runs * 3;
    let start = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (p, rx, commands) = (p.clone(), Arc::clone(&rx), Arc::clone(&commands));
            tokio::spawn(async move {
                while commands.load(Ordering::SeqCst) < expected {
                    let next = tokio::time::timeout(Duration::from_millis(200), async {
                        rx.lock().await.recv().await
                    })
                    .await;
                    if let Ok(Some(m)) = next {
                        match dispatch(&p, &m.body).await {
                            Ok(_) => {
                                commands.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..clients)
        .map(|_| {
            let p = p.clone();
            tokio::spawn(async move {
                for _ in 0..runs / clients {
                    start_run(&p, "three", json!({}), None, None)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                }
            })
        })
        .collect();
    for t in producers {
        let _ = t.await;
    }
    for w in workers {
        let _ = w.await;
    }
    runs as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let app = Application::builder("bench")
        .store("main")
        .workflow(three_steps(), "main")
        .capability("step", Step)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let db = PgTestDb::empty().await;
    let options = PgOptions { pool_size: 10, ..PgOptions::default() };
    let store: Arc<dyn Store> =
        Arc::new(Postgres::connect("main", db.url(), &options).unwrap_or_else(|e| panic!("{e}")));
    let catalog = catalog_for(&app, store.as_ref()).unwrap_or_else(|e| panic!("{e}"));
    migrate::apply(store.as_ref(), &catalog).await.unwrap_or_else(|e| panic!("{e}"));
    let (queue, _unused) = InProcessQueue::new();
    let engine = Engine {
        app: Arc::new(app),
        stores: [("main".to_owned(), Arc::clone(&store))].into_iter().collect(),
        queue: Arc::new(queue),
        clock: Arc::new(SystemClock),
        connections: Arc::new(NoConnections),
        settings: EngineSettings::default(),
        runs: jadpo_engine::steps::RunEnv::ephemeral(),
    };
    let mut rows = Vec::new();
    for clients in [1, 8] {
        let ceiling = pgbench_tps(db.url(), CEILING, clients, SECONDS);
        analyze(&engine).await;
        let (rate, cores) = transitions(&store, clients).await;
        analyze(&engine).await;
        let runs = runs_end_to_end(&engine, clients, 800).await;
        analyze(&engine).await;
        rows.push((clients, ceiling, rate, cores, runs));
    }
    let mut out = String::from(
        "## Workflows on PostgreSQL\n\n`cargo bench -p jadpo-runtime --bench workflow` (part of `make bench`): a throwaway \
         PostgreSQL 15 cluster (fsync off), 2 cores shared by client and server. Ceiling: a start transition's statements \
         (lock/read the revision, insert the execution, three events, one command) as a pgbench script. Transitions: \
         `decide` + `commit_transition` for new runs of a three-step workflow. End to end: `start_run`, then the \
         in-process queue and the delivery side running each command under the run's lease and committing its result \
         (four transitions per run), 800 runs, as many workers as clients.\n\n\
         | clients | ceiling tx/s | transitions/s | transitions / ceiling | client cores used | three-step runs/s |\n\
         |---|---|---|---|---|---|\n",
    );
    for (clients, ceiling, rate, cores, runs) in &rows {
        out.push_str(&format!(
            "| {clients} | {ceiling:.0} | {rate:.0} | {:.2}× | {cores:.2} | {runs:.0} |\n",
            rate / ceiling
        ));
    }
    out.push_str(
        "\nA command's round trip end to end is: load the command and its run, take the lease, run the capability, \
         reload the run, commit the transition under the lease (with its acknowledgement), release the lease, and \
         send the next command — on the same two cores as the server.\n",
    );
    print!("{out}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/workflow.md"), out).unwrap_or_else(|e| panic!("{e}"));
}
