//! Benchmark: workflow transitions through `commit_transition` on PostgreSQL against a plain-SQL
//! ceiling of the same statements, and runs/s of a three-step workflow end to end with the
//! in-process queue. Concurrency 1 and 8, in one run, on one throwaway cluster (fsync off).
//! `make bench` runs it and assembles BENCHMARKS.md.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Load, Step, analyze, cpu_seconds, engine_on, pgbench_tps, runs_end_to_end, step};
use jadpo_application::Application;
use jadpo_core::Store;
use jadpo_test_harness::PgTestDb;
use jadpo_workflow::def::{Node, WorkflowDef};
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::TransitionWrite;
use serde_json::json;

const SECONDS: u64 = 6;

fn three_steps() -> WorkflowDef {
    WorkflowDef::builder("three", "1", "a")
        .node("a", step("b"))
        .node("b", step("c"))
        .node("c", step("done"))
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A start transition's statements, as the PostgreSQL adapter sends them: insert the execution
/// (its key is the revision check), its three events in one statement, one command.
const CEILING: &str = r#"\set n random(1, 9000000000000000000)
BEGIN;
INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, current_node_id, revision, input, data, error, cancellation_state, loop_state, created_at, updated_at, owner) VALUES ('r' || :n || ':' || :client_id, 'three', '1', 'running', 'a', 3, '{}', '{}', NULL, NULL, NULL, now(), now(), NULL);
INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp, actor) SELECT e->>'id', 'r' || :n || ':' || :client_id, (e->>'seq')::integer, e->>'type', e->'payload', (e->>'timestamp')::bigint, NULL FROM jsonb_array_elements(('[{"id": "r' || :n || ':' || :client_id || ':1","seq": 1,"type": "run.started","payload": {"workflow_id": "three","workflow_version": "1","input": {}},"timestamp": 1},{"id": "r' || :n || ':' || :client_id || ':2","seq": 2,"type": "node.entered","payload": {"node": "a","kind": "step"},"timestamp": 1},{"id": "r' || :n || ':' || :client_id || ':3","seq": 3,"type": "command.issued","payload": {"command_id": "x","node": "a","capability": "step","payload": {},"compensation": false},"timestamp": 1}]')::jsonb) AS e;
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
                    let run = format!("t{clients}-{c}-{n}-{}", std::process::id());
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
        total += t.await.unwrap_or_else(|e| panic!("a client failed: {e}"));
    }
    let wall = start.elapsed().as_secs_f64();
    (total as f64 / wall, (cpu_seconds() - cpu) / wall)
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
    let engine = engine_on(app, db.url()).await;
    let store = Arc::clone(&engine.stores["main"]);
    let mut rows = Vec::new();
    for clients in [1, 8] {
        let ceiling = pgbench_tps(db.url(), CEILING, clients, SECONDS);
        analyze(&engine).await;
        let (rate, cores) = transitions(&store, clients).await;
        analyze(&engine).await;
        let load = Load::Count { per_client: 800 / clients, pace: None };
        let (_, runs) = runs_end_to_end(&engine, clients, "three", 3, load).await;
        analyze(&engine).await;
        rows.push((clients, ceiling, rate, cores, runs));
    }
    let mut out = String::from(
        "## Workflows on PostgreSQL\n\n`cargo bench -p jadpo-runtime --bench workflow` (part of `make bench`): a throwaway \
         PostgreSQL 15 cluster (fsync off), 2 cores shared by client and server. Ceiling: a start transition's statements \
         (insert the execution, whose key is the revision check, three events in one statement, one command) as a pgbench script. Transitions: \
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
        "\nA command's round trip end to end is: load the command and its run, take the lease (committed without \
         waiting for the WAL flush), run the capability, and commit the transition under the lease (its events in one \
         statement, its acknowledgement, and the lease's renewal or release). When the transition issues exactly one \
         next command, the same worker runs it straight away under the renewed lease, so a run's later steps cost no \
         queue message, relay pass or second lease take — on the same two cores as the server.\n",
    );
    print!("{out}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/bench");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(format!("{dir}/workflow.md"), out).unwrap_or_else(|e| panic!("{e}"));
}
