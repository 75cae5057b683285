//! `verify`'s eight checks on both adapters: a store written by the runtime passes all eight
//! and names its recovery point; a legacy history (older event ids, revisions counted
//! otherwise, a run from before events were kept) passes too; and each check fails, saying why,
//! on a database broken on purpose in the way it guards against.

use jadpo_core::{Clock, Dialect, Store};
use jadpo_engine::workflow::runs::{InSession, find_run, start_run};
use jadpo_engine::workflow::session::load_or_create_session;
use jadpo_engine::workflow::verify::{Report, verify};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::TransitionWrite;
use jadpo_workflow::state::ExecutionStatus;
use serde_json::json;

/// A shop with a checkout run waiting for its shipment (two commands done) started in a Session,
/// and a second run just started (one command pending). Returns the waiting run's id.
async fn seeded(kind: Kind) -> (Env, String) {
    let mut env = Env::shop(kind).await;
    let registered = |_: &str| true;
    let store = env.store("main").clone();
    let now = env.clock.now();
    let s = load_or_create_session(
        store.as_ref(),
        "s-1",
        "alice",
        now,
        &registered,
        || json!({"tenant": "t1"}),
    )
    .await;
    s.unwrap_or_else(|e| panic!("{e}"));
    let session = InSession::OfUser { id: "s-1", user: "alice", rebind: false };
    let run = start_run(&env.engine, "checkout", json!({"order_id": "o-1"}), Some(session), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .run_id;
    env.drain().await;
    let (_, waiting) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(waiting.status, ExecutionStatus::Waiting);
    env.clock.advance(chrono::Duration::seconds(1));
    start_run(&env.engine, "checkout", json!({"order_id": "o-2"}), None, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (env, run)
}

async fn report(env: &Env) -> Report {
    let store = env.store("main");
    let app = &env.engine.app;
    let catalog = store
        .migration_catalog()
        .with_app_migrations(app.migrations_for(store.name(), store.dialect()))
        .and_then(|c| c.with_placement(app.store_features(store.name())))
        .unwrap_or_else(|e| panic!("{e}"));
    let registered = |id: &str| env.engine.app.workflow(id).is_some();
    verify(store.as_ref(), &catalog, env.clock.as_ref(), &registered)
        .await
        .unwrap_or_else(|e| panic!("verify: {e}"))
}

async fn batch(store: &dyn Store, sql: &str) {
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
}

fn shown(r: &Report) -> String {
    r.checks
        .iter()
        .map(|c| format!("{} {}: {}", if c.passed { "PASS" } else { "FAIL" }, c.number, c.details))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What verify's probes could leave behind for a relay or a worker: dispatch rows, commands,
/// runs and Sessions, counted.
async fn workflow_rows(store: &dyn Store) -> Vec<i64> {
    let mut counts = Vec::new();
    for table in ["jadpo_command_dispatch", "outbox_commands", "workflow_executions", "sessions"] {
        let sql = format!("SELECT count(*) AS n FROM {table}");
        let rows = store.query_once(&sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
        counts.push(rows.first().and_then(|r| r.get_i64("n").ok()).unwrap_or(-1));
    }
    counts
}

/// A run whose id has the probes' prefix, at a capability (one pending command): the relay's
/// sweep never sends it, however long it waits.
async fn a_probe_s_command_is_never_swept(kind: Kind) {
    let env = Env::shop(kind).await;
    let store = env.store("main");
    let (def, _) = env.engine.app.workflow("checkout").unwrap_or_else(|| panic!("checkout"));
    let run = format!("{}x", jadpo_engine::workflow::verify::PROBE_PREFIX);
    let start = Incoming::Start { input: json!({"order_id": "o-1"}) };
    let t = decide(def, None, &start, &run, 1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.commands.len(), 1, "the probe-like run has a pending command");
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
    let later = env.clock.now() + chrono::Duration::days(1);
    let claimed = store.commands_claim_due(later, later, 100).await;
    assert_eq!(claimed.unwrap_or_else(|e| panic!("{e}")), Vec::<String>::new(), "{kind:?}");
}

async fn a_sound_store_passes_and_names_its_recovery_point(kind: Kind) {
    let (env, _) = seeded(kind).await;
    let before = workflow_rows(env.store("main").as_ref()).await;
    let r = report(&env).await;
    let after = workflow_rows(env.store("main").as_ref()).await;
    assert_eq!(
        after, before,
        "{kind:?}: verify's probes left rows behind (dispatch, commands, runs, Sessions)"
    );
    assert_eq!(r.checks.len(), 8);
    assert_eq!(r.failed(), 0, "{kind:?}:\n{}", shown(&r));
    let point = r.recovered.unwrap_or_else(|| panic!("no recovery point"));
    let rows = env
        .store("main")
        .query_once(
            "SELECT run_id, seq, timestamp FROM workflow_events ORDER BY timestamp DESC, seq DESC",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let newest = rows.first().unwrap_or_else(|| panic!("no events"));
    assert_eq!(point.run_id, newest.get_str("run_id").unwrap_or_default());
    assert_eq!(Some(point.revision), newest.get_i64("seq").ok());
    assert_eq!(Some(point.at_ms), newest.get_i64("timestamp").ok());
    assert_eq!((point.runs, point.events), (2, i64::try_from(rows.len()).unwrap_or(0)));
}

async fn a_legacy_history_passes(kind: Kind) {
    let (env, run) = seeded(kind).await;
    let store = env.store("main");
    // Older ids, and a revision counted per transition rather than per event.
    let revision = match kind {
        Kind::Sqlite => {
            "UPDATE workflow_executions SET revision = 3, \
             state_json = json_set(state_json, '$.revision', 3) WHERE run_id = $1"
        }
        Kind::Postgres => "UPDATE workflow_executions SET revision = 3 WHERE run_id = $1",
    };
    jadpo_test_harness::lift_history_guard(store.as_ref()).await.unwrap_or_else(|e| panic!("{e}"));
    for sql in [
        "UPDATE workflow_events SET id = 'legacy-' || seq || '-' || run_id WHERE run_id = $1",
        revision,
    ] {
        store.execute_once(sql, &[run.as_str().into()]).await.unwrap_or_else(|e| panic!("{e}"));
    }
    // A run from before events were kept.
    let other = store
        .query_once(
            "SELECT run_id FROM workflow_executions WHERE run_id <> $1",
            &[run.as_str().into()],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let other = other.first().and_then(|r| r.get_str("run_id").ok()).unwrap_or_default().to_owned();
    store
        .execute_once("DELETE FROM workflow_events WHERE run_id = $1", &[other.as_str().into()])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let r = report(&env).await;
    assert_eq!(r.failed(), 0, "{kind:?}:\n{}", shown(&r));
    assert!(r.checks[1].details.contains("1 legacy histories read"), "{}", shown(&r));
}

/// A history another implementation of the specification wrote: its revisions counted as the
/// specification says, its event ids of its own form (not `${runId}:${seq}`). All eight pass.
async fn another_implementation_s_history_passes(kind: Kind) {
    let (env, _) = seeded(kind).await;
    let store = env.store("main");
    jadpo_test_harness::lift_history_guard(store.as_ref()).await.unwrap_or_else(|e| panic!("{e}"));
    let sql = "UPDATE workflow_events SET id = 'evt_' || seq || '_' || replace(run_id, '-', '')";
    store.execute_once(sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let r = report(&env).await;
    assert_eq!(r.failed(), 0, "{kind:?}:\n{}", shown(&r));
}

/// How each check is broken on purpose, per dialect, and what its failure must say.
fn breakage(number: u8, dialect: Dialect) -> (&'static str, &'static [&'static str]) {
    let sqlite = dialect == Dialect::Sqlite;
    match number {
        1 => (
            "DELETE FROM jadpo_migrations WHERE ledger = 'jadpo' AND version = \
             (SELECT max(version) FROM jadpo_migrations WHERE ledger = 'jadpo')",
            &["is pending"],
        ),
        2 => ("UPDATE workflow_executions SET revision = revision + 5", &["has revision"]),
        3 => (
            "CREATE TABLE events_copy AS SELECT * FROM workflow_events; \
             DROP TABLE workflow_events; \
             ALTER TABLE events_copy RENAME TO workflow_events; \
             INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) \
             SELECT id || '-again', run_id, seq, type, payload, timestamp FROM workflow_events \
             WHERE seq = 1; \
             INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) \
             SELECT id, run_id, seq + 100, type, payload, timestamp FROM workflow_events \
             WHERE seq = 2",
            &["(run_id, seq) pairs occur more than once", "event ids occur more than once"],
        ),
        4 if sqlite => (
            "UPDATE workflow_executions SET \
             state_json = json_set(state_json, '$.data', json('{\"forged\": true}'))",
            &["replays to a different state"],
        ),
        4 => (
            "UPDATE workflow_executions SET data = '{\"forged\": true}'::jsonb",
            &["replays to a different state"],
        ),
        5 => (
            "UPDATE outbox_commands SET idempotency_key = 'another-key'; \
             UPDATE outbox_commands SET status = 'lost' \
             WHERE seq = (SELECT max(seq) FROM outbox_commands)",
            &["has the unknown status \"lost\"", "has idempotency key \"another-key\""],
        ),
        6 => (
            "UPDATE sessions SET active_run_id = 'no-such-run'",
            &["bound to run no-such-run, which does not exist"],
        ),
        7 if sqlite => (
            "CREATE TRIGGER sessions_forget AFTER UPDATE ON sessions BEGIN \
             UPDATE sessions SET context_revision = 0 WHERE id = new.id; END",
            &["did not round-trip"],
        ),
        7 => (
            "CREATE FUNCTION sessions_forget() RETURNS trigger LANGUAGE plpgsql AS \
             $f$ BEGIN NEW.context_revision := 0; RETURN NEW; END $f$; \
             CREATE TRIGGER sessions_forget BEFORE UPDATE ON sessions FOR EACH ROW \
             EXECUTE FUNCTION sessions_forget()",
            &["did not round-trip"],
        ),
        _ => (
            "CREATE TABLE leases_copy AS SELECT * FROM execution_leases; \
             DROP TABLE execution_leases; \
             ALTER TABLE leases_copy RENAME TO execution_leases",
            &["the store failed the probe"],
        ),
    }
}

async fn each_check_fails_on_what_it_guards(kind: Kind) {
    for number in 1..=8u8 {
        let (env, _) = seeded(kind).await;
        let store = env.store("main");
        let (sql, says) = breakage(number, store.dialect());
        batch(store.as_ref(), sql).await;
        let r = report(&env).await;
        let c = &r.checks[usize::from(number) - 1];
        assert_eq!(c.number, number);
        assert!(!c.passed, "{kind:?}: check {number} passed on a broken store:\n{}", shown(&r));
        for s in says {
            assert!(
                c.details.contains(s),
                "{kind:?}: check {number} does not say {s:?}: {}",
                c.details
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_holds_each_check_to_the_specification() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        a_sound_store_passes_and_names_its_recovery_point(kind).await;
        a_probe_s_command_is_never_swept(kind).await;
        a_legacy_history_passes(kind).await;
        another_implementation_s_history_passes(kind).await;
        each_check_fails_on_what_it_guards(kind).await;
    }
}
