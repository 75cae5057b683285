//! `jadpo verify` on migrated stores with a run and a Session; a broken store fails it; a
//! backup restored with the documented commands (SQLite online backup; pg_dump/pg_restore)
//! passes it.

use crate::common;

use std::process::Command;

use common::{jadpo, text};

use chrono::Utc;
use jadpo_core::{Store, TransactionalStore};
use jadpo_test_harness::{PgTestDb, SqliteTestDb};
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::TransitionWrite;
use serde_json::json;

/// Starts a checkout run `run` at `at_ms`.
async fn start(store: &dyn Store, run: &str, at_ms: i64) {
    let def = jadpo_app::checkout().unwrap_or_else(|e| panic!("{e}"));
    let t = decide(&def, None, &Incoming::Start { input: json!({"order_id": run}) }, run, at_ms)
        .unwrap_or_else(|e| panic!("{e}"));
    let write = TransitionWrite {
        owner: None,
        actor: None,
        run_id: run,
        expected_revision: None,
        transition: &t,
        session: None,
        lease: None,
    };
    store.commit_transition(&write).await.unwrap_or_else(|e| panic!("{e}"));
}

/// Migrates with the CLI, then writes a started checkout run and a Session through the store.
async fn seed(url: &str, store: &dyn Store) {
    let out = jadpo(url, &["migrate", "apply"]);
    assert!(out.status.success(), "{}", text(&out));
    start(store, "run-1", 1_000).await;
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

/// Passes the eight checks and prints the recovery point; returns what it printed.
fn passes(url: &str) -> String {
    let out = jadpo(url, &["verify"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert_eq!(shown.matches("  PASS ").count(), 8, "{shown}");
    assert!(shown.contains("  RECOVERED to "), "{shown}");
    shown
}

#[tokio::test]
async fn a_sound_sqlite_store_passes_and_its_online_backup_too() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    let shown = passes(&db.url());
    let point = "RECOVERED to 1970-01-01T00:00:01+00:00 (run run-1 at revision ";
    assert!(shown.contains(point), "{shown}");
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
    assert_eq!(doc["stores"][0]["recovered"]["run_id"], "run-1", "{doc}");
    assert_eq!(doc["stores"][0]["recovered"]["at_ms"], 1_000, "{doc}");
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
    assert!(shown.contains("FAIL 5.") && shown.contains("is pending but processed"), "{shown}");
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

/// Whether `store` holds run `run`.
async fn holds(store: &dyn Store, run: &str) -> bool {
    store.execution_get(run).await.unwrap_or_else(|e| panic!("{e}")).is_some()
}

/// The restore procedure end to end on SQLite: `jadpo backup` while the store is open; a run
/// written after it; `jadpo restore` refused while a process has the database open; then, on the
/// files a killed process left (main file, `-wal` holding that run, `-shm`), the restore keeps
/// all three whole (the kept copy still opens with the run), puts the backup in place with no
/// stale `-wal` replayed into it, and passes the eight checks, printing the recovery point.
#[tokio::test]
async fn an_sqlite_restore_keeps_the_failed_database_whole_and_verifies() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backup = dir.path().join("backup.db");
    let backup_arg = backup.display().to_string();
    let out = jadpo(&db.url(), &["backup", "--output", &backup_arg]);
    assert!(out.status.success(), "{}", text(&out));
    let again = jadpo(&db.url(), &["backup", "--output", &backup_arg]);
    assert!(!again.status.success() && text(&again).contains("exists already"), "{}", text(&again));
    let folder = dir.path().join("backups");
    let nowhere = folder.join("main.db").display().to_string();
    let no_folder = jadpo(&db.url(), &["backup", "--output", &nowhere]);
    let said = text(&no_folder);
    let named = format!("the folder {} does not exist: create it first", folder.display());
    assert!(!no_folder.status.success() && said.contains(&named), "{said}");
    start(&store, "run-2", 2_000).await;

    let keep = dir.path().join("kept");
    let keep_arg = keep.display().to_string();
    let refused = jadpo(&db.url(), &["restore", "--from", &backup_arg, "--keep", &keep_arg]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(text(&refused).contains("is open in another process"), "{}", text(&refused));
    assert!(!keep.exists(), "a refused restore kept files");
    assert!(holds(&store, "run-2").await, "a refused restore changed the database");

    // The files a process killed now leaves: run-2 is only in the `-wal`.
    let crashed = dir.path().join("crashed");
    std::fs::create_dir(&crashed).unwrap_or_else(|e| panic!("{e}"));
    let name = db.path().file_name().unwrap_or_default().to_owned();
    for suffix in ["", "-wal", "-shm"] {
        let mut file = name.clone();
        file.push(suffix);
        std::fs::copy(db.path().with_file_name(&file), crashed.join(&file))
            .unwrap_or_else(|e| panic!("{suffix}: {e}"));
    }
    drop(store);
    let failed_db = crashed.join(&name);
    let url = format!("sqlite://{}", failed_db.display());
    let out = jadpo(&url, &["restore", "--from", &backup_arg, "--keep", &keep_arg]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert_eq!(shown.matches("  PASS ").count(), 8, "{shown}");
    assert!(shown.contains("RECOVERED to 1970-01-01T00:00:01+00:00 (run run-1 "), "{shown}");
    let mut wal = name.clone();
    wal.push("-wal");
    assert!(keep.join(&wal).exists(), "the failed database's -wal was not kept: {shown}");
    let kept = SqliteTestDb::open(&keep.join(&name));
    assert!(holds(&kept, "run-2").await, "the kept copy lost what its -wal held");
    let restored = SqliteTestDb::open(&failed_db);
    assert!(holds(&restored, "run-1").await && !holds(&restored, "run-2").await);
    let from_backup = SqliteTestDb::open(&backup);
    assert_eq!(contents(&restored).await, contents(&from_backup).await, "the restore differs");
}

/// A file that is not a database is refused as a backup, and the database is left as it was;
/// a PostgreSQL store is pointed to PostgreSQL's own tools.
#[tokio::test]
async fn a_restore_from_a_broken_backup_changes_nothing() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    drop(store);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all").unwrap_or_else(|e| panic!("{e}"));
    let keep = dir.path().join("kept").display().to_string();
    let junk_arg = junk.display().to_string();
    let out = jadpo(&db.url(), &["restore", "--from", &junk_arg, "--keep", &keep]);
    assert!(
        !out.status.success() && text(&out).contains("is not a sound SQLite database"),
        "{}",
        text(&out)
    );
    assert!(!dir.path().join("kept").exists());
    passes(&db.url());
    let pg = jadpo("postgres://postgres@127.0.0.1:5432/none", &["backup", "--output", &keep]);
    assert!(!pg.status.success() && text(&pg).contains("pg_dump"), "{}", text(&pg));
}

/// The case a restore exists for: the failed database's main file gone (only its `-wal` left), or
/// overwritten so its header is not SQLite's. Either way the restore goes on, keeps whatever
/// remained byte for byte, says what it found, and the restored store holds the backup and
/// passes the checks.
#[tokio::test]
async fn a_restore_over_a_missing_or_unreadable_database_keeps_what_remained() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    drop(store);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let backup = dir.path().join("backup.db");
    let backup_arg = backup.display().to_string();
    assert!(jadpo(&db.url(), &["backup", "--output", &backup_arg]).status.success());
    let from_backup = contents(&SqliteTestDb::open(&backup)).await;
    for (case, said) in [("missing", "main file was gone"), ("unreadable", "was unreadable")] {
        let failed = dir.path().join(format!("{case}.db"));
        let wal = dir.path().join(format!("{case}.db-wal"));
        std::fs::write(&wal, b"what a crash left").unwrap_or_else(|e| panic!("{e}"));
        if case == "unreadable" {
            std::fs::write(&failed, vec![0xA5_u8; 8192]).unwrap_or_else(|e| panic!("{e}"));
        }
        let keep = dir.path().join(format!("kept-{case}"));
        let url = format!("sqlite://{}", failed.display());
        let keep_arg = keep.display().to_string();
        let out = jadpo(&url, &["restore", "--from", &backup_arg, "--keep", &keep_arg]);
        let shown = text(&out);
        assert!(out.status.success(), "{case}: {shown}");
        assert!(shown.contains(said), "{case}: {shown}");
        assert_eq!(shown.matches("  PASS ").count(), 8, "{case}: {shown}");
        let kept_wal = std::fs::read(keep.join(format!("{case}.db-wal")));
        assert_eq!(kept_wal.ok().as_deref(), Some(&b"what a crash left"[..]), "{case}: the -wal");
        let kept_main = std::fs::read(keep.join(format!("{case}.db"))).ok();
        assert_eq!(kept_main.map(|m| m.len()), (case == "unreadable").then_some(8192), "{case}");
        assert!(!wal.exists(), "{case}: the stale -wal stayed beside the restored file");
        let restored = contents(&SqliteTestDb::open(&failed)).await;
        assert_eq!(restored, from_backup, "{case}: the restore differs from the backup");
    }
}

/// `jadpo migrate events` rewrites rows an earlier release wrote (the inner payload alone) into
/// the complete form, then has nothing left to do; `verify` passes before and after; a batch of 0
/// is refused before anything is read.
#[tokio::test]
async fn migrate_events_upgrades_older_rows_once() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    start(&store, "run-2", 2_000).await;
    jadpo_test_harness::lift_history_guard(&store).await.unwrap_or_else(|e| panic!("{e}"));
    store
        .execute_once(
            "UPDATE workflow_events SET payload = json_extract(payload, '$.payload')",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let before = contents(&store).await;
    passes(&db.url());
    let zero = jadpo(&db.url(), &["migrate", "events", "--batch", "0"]);
    assert!(!zero.status.success(), "{}", text(&zero));
    assert_eq!(contents(&store).await, before, "a refused upgrade changed rows");
    let events = store
        .query_once("SELECT count(*) AS n FROM workflow_events", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let n = events.first().map(|r| r.get_i64("n")).transpose().unwrap_or_else(|e| panic!("{e}"));
    let out = jadpo(&db.url(), &["migrate", "events", "--batch", "3"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains(&format!("store main: {} events rewritten", n.unwrap_or(0))), "{shown}");
    let again = jadpo(&db.url(), &["migrate", "events", "--json"]);
    let doc: serde_json::Value =
        serde_json::from_slice(&again.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&again)));
    assert_eq!(doc["stores"][0]["rewritten"], 0, "{doc}");
    passes(&db.url());
}
