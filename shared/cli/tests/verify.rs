//! `jadpo verify` on migrated stores with a run and a Session; a broken store fails it; a
//! backup restored with the documented commands (SQLite online backup; pg_dump/pg_restore)
//! passes it.

mod common;

use std::process::Command;

use common::{jadpo, text};

use chrono::Utc;
use jadpo_core::model::workflow::kernel::{Incoming, decide};
use jadpo_core::model::workflow::rows::TransitionWrite;
use jadpo_core::{Store, TransactionalStore};
use jadpo_test_harness::{PgTestDb, SqliteTestDb};
use serde_json::json;

/// Migrates with the CLI, then writes a started checkout run and a Session through the store.
async fn seed(url: &str, store: &dyn Store) {
    let out = jadpo(url, &["migrate", "apply"]);
    assert!(out.status.success(), "{}", text(&out));
    let def = jadpo_app::checkout().unwrap_or_else(|e| panic!("{e}"));
    let t =
        decide(&def, None, &Incoming::Start { input: json!({"order_id": "o-1"}) }, "run-1", 1_000)
            .unwrap_or_else(|e| panic!("{e}"));
    let write = TransitionWrite {
        owner: None,
        actor: None,
        run_id: "run-1",
        expected_revision: None,
        transition: &t,
        session: None,
        lease: None,
    };
    store.commit_transition(&write).await.unwrap_or_else(|e| panic!("{e}"));
    store
        .session_create("s-1", "alice", &json!({"tenant": "t1"}), Utc::now(), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Every row of the tables a restore must bring back whole, in a stable order: what was
/// written, compared with what came back (a restore that lost rows would still pass `verify`).
async fn contents(store: &dyn Store) -> Vec<String> {
    let tables = [
        "workflow_executions",
        "workflow_events",
        "sessions",
        "outbox_commands",
        "jadpo_migrations",
        "jadpo_deliveries",
        "jadpo_outbox",
    ];
    let mut out = Vec::new();
    for table in tables {
        let rows = store.query_once(&format!("SELECT * FROM {table} ORDER BY 1"), &[]).await;
        let rows = rows.unwrap_or_else(|e| panic!("{table}: {e}"));
        out.extend(rows.iter().map(|r| format!("{table}: {:?}", r.values())));
    }
    // The seed's run, its start event and its Session are there to be lost.
    for table in ["workflow_executions", "workflow_events", "sessions", "jadpo_migrations"] {
        assert!(out.iter().any(|r| r.starts_with(&format!("{table}: "))), "no {table} row");
    }
    out
}

fn passes(url: &str) {
    let out = jadpo(url, &["verify"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert_eq!(shown.matches("  PASS ").count(), 8, "{shown}");
}

#[tokio::test]
async fn a_sound_sqlite_store_passes_and_its_online_backup_too() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    passes(&db.url());
    let copy = db.path().with_file_name("backup.db");
    let backup = Command::new("sqlite3")
        .arg(db.path())
        .arg(format!(".backup '{}'", copy.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("sqlite3 is needed for the backup test (make prereqs installs it): {e}")
        });
    assert!(backup.status.success(), "{}", text(&backup));
    passes(&format!("sqlite://{}", copy.display()));
    let restored = SqliteTestDb::open(&copy);
    assert_eq!(contents(&restored).await, contents(&store).await, "the backup differs");
    let json = jadpo(&db.url(), &["verify", "--json"]);
    let doc: serde_json::Value =
        serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doc["failed"], 0);
}

#[tokio::test]
async fn a_broken_store_fails_verification_and_says_why() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    store
        .execute_once("UPDATE workflow_executions SET revision = 99 WHERE run_id = 'run-1'", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .execute_once("UPDATE outbox_commands SET processed_at = 1", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let out = jadpo(&db.url(), &["verify"]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("FAIL 2.") && shown.contains("run run-1 has revision 99 but last event"),
        "{shown}"
    );
    assert!(shown.contains("FAIL 5.") && shown.contains("with the wrong processed_at"), "{shown}");
    assert!(shown.contains("verification check(s) failed"), "{shown}");
}

#[tokio::test]
async fn a_postgres_dump_restored_into_another_database_passes() {
    let source = PgTestDb::empty().await;
    let store = source.store();
    seed(source.url(), &store).await;
    passes(source.url());
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dump = dir.path().join("jadpo.dump");
    let out = Command::new("pg_dump")
        .args(["--format=custom", "--no-owner", "--file"])
        .arg(&dump)
        .arg(source.url())
        .output()
        .unwrap_or_else(|e| panic!("pg_dump: {e}"));
    assert!(out.status.success(), "{}", text(&out));
    let target = PgTestDb::empty().await;
    let out = Command::new("pg_restore")
        .args(["--clean", "--if-exists", "--no-owner", "--dbname", target.url()])
        .arg(&dump)
        .output()
        .unwrap_or_else(|e| panic!("pg_restore: {e}"));
    assert!(out.status.success(), "{}", text(&out));
    passes(target.url());
    let restored = contents(&target.store()).await;
    assert_eq!(restored, contents(&store).await, "the restored database differs");
}
