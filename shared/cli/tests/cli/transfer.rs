//! `jadpo export` from SQLite, `jadpo import` into PostgreSQL, then `jadpo verify` — the spec's
//! logical move between adapters — and the refusals of a bad or repeated import.

use crate::common;

use std::process::Output;

use common::{jadpo, text};

use chrono::Utc;
use jadpo_core::ports::{WorkflowOps, WorkflowStore};
use jadpo_core::{Store, TransactionalStore};
use jadpo_test_harness::{PgTestDb, SqliteTestDb};
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::TransitionWrite;
use serde_json::json;

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", text(out));
}

/// A run taken to its wait (two commands completed) and a Session bound to it.
async fn seed(url: &str, store: &dyn Store) {
    ok(&jadpo(url, &["migrate", "apply"]));
    let def = jadpo_app::checkout().unwrap_or_else(|e| panic!("{e}"));
    store
        .session_create("s-1", "alice", &json!({"tenant": "t1"}), Utc::now(), Some("service:web"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut state = None;
    let mut commands = Vec::new();
    let mut incoming = Incoming::Start { input: json!({"order_id": "o-1"}) };
    for step in 0..3 {
        let t = decide(&def, state.as_ref(), &incoming, "run-1", 1_000 + step)
            .unwrap_or_else(|e| panic!("{e}"));
        let session = (step == 0).then(|| jadpo_workflow::rows::SessionWrite {
            session_id: "s-1".into(),
            user_id: "alice".into(),
            expected_revision: 0,
        });
        let write = TransitionWrite {
            owner: Some("service:web"),
            actor: Some("service:web"),
            run_id: "run-1",
            expected_revision: state
                .as_ref()
                .map(|s: &jadpo_workflow::state::ExecutionState| s.revision),
            transition: &t,
            session,
            lease: None,
        };
        store.commit_transition(&write).await.unwrap_or_else(|e| panic!("{e}"));
        commands = t.commands.clone();
        state = Some(t.state);
        if let Some(c) = commands.first() {
            incoming = Incoming::CommandCompleted {
                command_id: c.id.clone(),
                node_id: c.node_id.clone(),
                result: json!({"ok": step}),
            };
        }
    }
    assert!(commands.is_empty(), "the run should wait for the shipment");
}

#[tokio::test]
async fn a_sqlite_store_moves_to_postgres_and_verifies() {
    let sqlite = SqliteTestDb::empty();
    let source = sqlite.store();
    seed(&sqlite.url(), &source).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("export.jsonl");
    let file_arg = file.to_string_lossy().into_owned();
    let exported = jadpo(&sqlite.url(), &["export", "--output", &file_arg]);
    ok(&exported);
    assert!(text(&exported).contains("exported 1 runs and 1 sessions"), "{}", text(&exported));
    let meta = std::fs::metadata(&file).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "an export is its owner's alone");
    let written = std::fs::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let again = jadpo(&sqlite.url(), &["export", "--output", &file_arg]);
    assert!(!again.status.success(), "an export overwrote a file: {}", text(&again));
    assert!(
        text(&again).contains("exists: `jadpo export` writes a new file only"),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read(&file).unwrap_or_default(), written, "the existing file changed");

    let pg = PgTestDb::empty().await;
    let before = jadpo(pg.url(), &["import", "--input", &file_arg]);
    assert!(
        !before.status.success() && text(&before).contains("is not migrated"),
        "{}",
        text(&before)
    );
    ok(&jadpo(pg.url(), &["migrate", "apply"]));
    let imported = jadpo(pg.url(), &["import", "--input", &file_arg]);
    ok(&imported);
    let verified = jadpo(pg.url(), &["verify"]);
    ok(&verified);
    assert_eq!(text(&verified).matches("  PASS ").count(), 8, "{}", text(&verified));

    let target = pg.store();
    let moved = target.execution_get("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(moved, source.execution_get("run-1").await.unwrap_or_else(|e| panic!("{e}")));
    assert!(moved.is_some(), "run-1 did not move");
    let events = target.execution_events("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!events.is_empty(), "run-1 moved without its events");
    assert_eq!(events, source.execution_events("run-1").await.unwrap_or_else(|e| panic!("{e}")));
    let session = target
        .session_get("s-1")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("no session"));
    assert_eq!((session.active_run_id.as_deref(), session.revision), (Some("run-1"), 1));
    // Owners travel with the export: the run and the Session stay their principal's.
    assert_eq!(session.owner.as_deref(), Some("service:web"));
    let owner = target.execution_owner("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(owner.as_deref(), Some("service:web"));

    let again = jadpo(pg.url(), &["import", "--input", &file_arg]);
    assert!(
        !again.status.success() && text(&again).contains("importing run run-1"),
        "{}",
        text(&again)
    );
}

/// A cut, garbled or foreign export is refused before anything is written, and says so.
#[tokio::test]
async fn a_cut_or_garbled_export_is_refused() {
    let sqlite = SqliteTestDb::empty();
    let source = sqlite.store();
    seed(&sqlite.url(), &source).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let full = dir.path().join("full.jsonl");
    ok(&jadpo(&sqlite.url(), &["export", "--output", &full.to_string_lossy()]));
    let content = std::fs::read_to_string(&full).unwrap_or_default();
    let lines: Vec<&str> = content.lines().collect();
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, lines[..lines.len() - 1].join("\n")).unwrap_or_else(|e| panic!("{e}"));
    let target = SqliteTestDb::empty();
    ok(&jadpo(&target.url(), &["migrate", "apply"]));
    let out = jadpo(&target.url(), &["import", "--input", &cut.to_string_lossy()]);
    assert!(!out.status.success() && text(&out).contains("cut short"), "{}", text(&out));
    assert!(text(&out).contains("nothing was imported"), "{}", text(&out));
    let runs =
        target.store().query_once("SELECT count(*) AS n FROM workflow_executions", &[]).await;
    let runs = runs.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runs[0].get_i64("n").ok(), Some(0), "a refused import wrote runs");
    let garbled = dir.path().join("garbled.jsonl");
    std::fs::write(&garbled, format!("{}\nnot json\n", lines[0])).unwrap_or_else(|e| panic!("{e}"));
    let target = SqliteTestDb::empty();
    ok(&jadpo(&target.url(), &["migrate", "apply"]));
    let out = jadpo(&target.url(), &["import", "--input", &garbled.to_string_lossy()]);
    let said = text(&out);
    assert!(!out.status.success() && said.contains("line 2 is not JSON"), "{said}");
    assert!(said.contains("nothing was imported"), "{said}");
    // The whole file through standard input, as `jadpo import < file` gives it: imported.
    let piped = SqliteTestDb::empty();
    ok(&jadpo(&piped.url(), &["migrate", "apply"]));
    let mut import = std::process::Command::new(env!("CARGO_BIN_EXE_jadpo"));
    import.args(["import", "--json"]).env("DATABASE_URL", piped.url()).env("RUST_LOG", "warn");
    let file = std::fs::File::open(&full).unwrap_or_else(|e| panic!("{e}"));
    let out = import.stdin(file).output().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success() && text(&out).contains("imported 1 runs and 1 sessions"),
        "{}",
        text(&out)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!((summary["runs"].as_u64(), summary["sessions"].as_u64()), (Some(1), Some(1)));
    let alien = dir.path().join("alien.jsonl");
    std::fs::write(&alien, "{\"format\": \"something-else\"}\n").unwrap_or_else(|e| panic!("{e}"));
    let out = jadpo(&target.url(), &["import", "--input", &alien.to_string_lossy()]);
    assert!(
        !out.status.success() && text(&out).contains("not a jadpo.workflow-export"),
        "{}",
        text(&out)
    );
}

/// `jadpo runs list` and `jadpo sessions list` find a store's runs and Sessions by workflow,
/// status, owner and user; an unknown status is a usage error.
#[tokio::test]
async fn runs_and_sessions_are_listed_and_filtered() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    let json = |args: &[&str]| -> serde_json::Value {
        let out = jadpo(&db.url(), &[args, &["--json"]].concat());
        ok(&out);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let runs = json(&["runs", "list"]);
    assert_eq!(runs["runs"][0]["run_id"], json!("run-1"), "{runs}");
    assert_eq!(runs["runs"][0]["status"], json!("waiting"), "{runs}");
    assert_eq!(runs["runs"][0]["owner"], json!("service:web"), "{runs}");
    let count = |v: serde_json::Value, key: &str| v[key].as_array().map_or(0, Vec::len);
    assert_eq!(
        count(json(&["runs", "list", "--workflow", "checkout", "--status", "waiting"]), "runs"),
        1
    );
    assert_eq!(count(json(&["runs", "list", "--status", "completed"]), "runs"), 0);
    assert_eq!(count(json(&["runs", "list", "--owner", "user:alice"]), "runs"), 0);
    let sessions = json(&["sessions", "list"]);
    assert_eq!(sessions["sessions"][0]["active_run_id"], json!("run-1"), "{sessions}");
    assert_eq!(count(json(&["sessions", "list", "--user", "alice"]), "sessions"), 1);
    assert_eq!(count(json(&["sessions", "list", "--user", "bob"]), "sessions"), 0);
    let listed = jadpo(&db.url(), &["runs", "list"]);
    ok(&listed);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("run-1  checkout"),
        "{}",
        text(&listed)
    );
    let bad = jadpo(&db.url(), &["runs", "list", "--status", "asleep"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

/// Waits until process `pid` catches SIGTERM (Linux's `/proc`: bit 15 of `SigCgt`): until then a
/// TERM would end it outright rather than ask it to stop.
fn wait_until_it_catches_sigterm(pid: &str) {
    let catches_term = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).unwrap_or_default();
        u64::from_str_radix(mask.trim(), 16).is_ok_and(|m| m & (1 << 14) != 0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !catches_term() {
        assert!(std::time::Instant::now() < deadline, "process {pid} never listened for SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `jadpo import` asked to stop (SIGTERM, as `kill` and `docker stop` send) stops between
/// records and says how far it got: here while it still reads standard input, so nothing.
#[tokio::test]
async fn an_import_stops_on_sigterm_and_says_how_far_it_got() {
    use std::io::Write;
    let source = SqliteTestDb::empty();
    seed(&source.url(), &source.store()).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("main.jsonl");
    ok(&jadpo(&source.url(), &["export", "--output", &file.to_string_lossy()]));
    let target = SqliteTestDb::empty();
    ok(&jadpo(&target.url(), &["migrate", "apply"]));
    let mut import = std::process::Command::new(env!("CARGO_BIN_EXE_jadpo"))
        .arg("import")
        .env("DATABASE_URL", target.url())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = import.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    stdin.write_all(&std::fs::read(&file).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    let pid = import.id().to_string();
    wait_until_it_catches_sigterm(&pid);
    let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()));
    drop(stdin);
    let out = import.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an import asked to stop carried on: {said}");
    assert!(said.contains("stopped by SIGTERM: 0 of 1 runs"), "{said}");
    let runs =
        target.store().query_once("SELECT count(*) AS n FROM workflow_executions", &[]).await;
    assert_eq!(runs.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").ok(), Some(0));
}

/// `jadpo export` asked to stop stops between runs and says the file is incomplete (it has no
/// end marker, so `jadpo import` refuses it). A hundred runs fill the pipe no one reads, so the
/// export is surely mid-way when SIGTERM comes.
#[tokio::test]
async fn an_export_stops_on_sigterm_and_says_the_file_is_incomplete() {
    use std::io::Read;
    let db = SqliteTestDb::empty();
    ok(&jadpo(&db.url(), &["migrate", "apply"]));
    let store = db.store();
    let def = jadpo_app::checkout().unwrap_or_else(|e| panic!("{e}"));
    for i in 0..100 {
        let run = format!("run-{i:03}");
        let start = Incoming::Start {
            input: json!({"order_id": format!("o-{i}"), "pad": "x".repeat(2000)}),
        };
        let t = decide(&def, None, &start, &run, 1_000).unwrap_or_else(|e| panic!("{e}"));
        let write = TransitionWrite {
            owner: Some("service:web"),
            actor: None,
            run_id: &run,
            expected_revision: None,
            transition: &t,
            session: None,
            lease: None,
        };
        store.commit_transition(&write).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let mut export = std::process::Command::new(env!("CARGO_BIN_EXE_jadpo"))
        .arg("export")
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let pid = export.id().to_string();
    wait_until_it_catches_sigterm(&pid);
    let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()));
    let mut written = String::new();
    let mut stdout = export.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    stdout.read_to_string(&mut written).unwrap_or_else(|e| panic!("{e}"));
    let out = export.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an export asked to stop carried on: {said}");
    assert!(said.contains("stopped by SIGTERM after") && said.contains("export again"), "{said}");
    assert!(!written.contains("\"end\""), "an interrupted export wrote an end marker");
}

async fn runs_in(store: &dyn Store) -> i64 {
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let row = tx.query_one("SELECT count(*) AS n FROM workflow_executions", &[]).await;
    let n = row.and_then(|r| r.get_i64("n")).unwrap_or_else(|e| panic!("{e}"));
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    n
}

/// `jadpo runs list --parked` shows a run whose workflow version the deployment does not
/// register, with the operator's message; `jadpo runs delete` refuses an unfinished run, a
/// blank reason and an unknown run, then deletes the run forced, unbinds its Session and
/// records the act in the operator-action log.
#[tokio::test]
async fn a_parked_run_is_listed_and_an_operator_deletes_it() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let moved = "UPDATE workflow_executions SET workflow_version = 'retired', \
                 state_json = json_set(state_json, '$.workflow_version', 'retired') WHERE run_id = $1";
    tx.execute(moved, &["run-1".into()]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let parked = jadpo(&db.url(), &["runs", "list", "--parked", "--json"]);
    ok(&parked);
    let parked: serde_json::Value =
        serde_json::from_slice(&parked.stdout).unwrap_or_else(|e| panic!("{e}"));
    let reason = parked["runs"][0]["parked"].as_str().unwrap_or_default();
    assert!(reason.contains("version \"retired\""), "{parked}");
    let as_text = jadpo(&db.url(), &["runs", "list", "--parked"]);
    assert!(text(&as_text).contains("run run-1 is parked"), "{}", text(&as_text));

    let delete = |args: &[&str]| {
        jadpo(&db.url(), &[&["runs", "delete", "--operator", "dora"][..], args].concat())
    };
    let unfinished = delete(&["run-1", "--reason", "test"]);
    assert_eq!(unfinished.status.code(), Some(1), "{}", text(&unfinished));
    assert!(text(&unfinished).contains("not finished"), "{}", text(&unfinished));
    let blank = delete(&["run-1", "--reason", " ", "--force"]);
    assert!(text(&blank).contains("--reason TEXT"), "{}", text(&blank));
    let unknown = delete(&["nope", "--reason", "test"]);
    assert!(text(&unknown).contains("no run nope"), "{}", text(&unknown));
    let no_reason = delete(&["run-1"]);
    assert_eq!(no_reason.status.code(), Some(2), "--reason is required: {}", text(&no_reason));
    assert_eq!(runs_in(&store).await, 1, "a refused delete changed something");

    let deleted = delete(&["run-1", "--reason", "retired version", "--force"]);
    ok(&deleted);
    assert!(text(&deleted).contains("deleted run run-1"), "{}", text(&deleted));
    assert!(text(&deleted).contains("1 Session(s) unbound"), "{}", text(&deleted));
    assert_eq!(runs_in(&store).await, 0);
    let session = store.session_get("s-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(session.and_then(|s| s.active_run_id), None, "the Session names a deleted run");
    let log = jadpo(&db.url(), &["actions", "list", "--json"]);
    ok(&log);
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(log.contains("run.delete") && log.contains("retired version"), "{log}");
}

/// `jadpo runs cancel` refuses a blank reason and an unknown run with nothing changed, cancels
/// the waiting run (its compensations queued, so it is `cancelling`), records `run.cancel` with
/// the operator and the reason, and refuses to cancel it again.
#[tokio::test]
async fn an_operator_cancels_a_run() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    seed(&db.url(), &store).await;
    let cancel = |args: &[&str]| {
        jadpo(&db.url(), &[&["runs", "cancel", "--operator", "dora"][..], args].concat())
    };
    let status = || async {
        let run = store.execution_get("run-1").await.unwrap_or_else(|e| panic!("{e}"));
        run.map(|r| r.status.as_str().to_owned()).unwrap_or_default()
    };
    let blank = cancel(&["run-1", "--reason", " "]);
    assert_eq!(blank.status.code(), Some(1), "{}", text(&blank));
    assert!(text(&blank).contains("a reason is required"), "{}", text(&blank));
    let unknown = cancel(&["nope", "--reason", "test"]);
    assert!(text(&unknown).contains("no run nope"), "{}", text(&unknown));
    assert_eq!(status().await, "waiting", "a refused cancel changed the run");

    let done = cancel(&["run-1", "--reason", "customer asked", "--json"]);
    ok(&done);
    let answer: serde_json::Value =
        serde_json::from_slice(&done.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer["status"], "cancelling", "{answer}");
    assert_eq!(status().await, "cancelling");
    let again = cancel(&["run-1", "--reason", "again"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    let log = jadpo(&db.url(), &["actions", "list", "--json"]);
    ok(&log);
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(log.contains("run.cancel") && log.contains("customer asked"), "{log}");
    assert_eq!(log.matches("run.cancel").count(), 1, "{log}");
}

/// The run and Session lines of an export, as JSON: what a round trip must keep.
fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    let content = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let values = content.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}")));
    values
        .filter(|v: &serde_json::Value| v.get("run").is_some() || v.get("session").is_some())
        .collect()
}

fn export_to(url: &str, path: &std::path::Path) {
    let out = jadpo(url, &["export", "--output", &path.to_string_lossy()]);
    ok(&out);
}

fn import_verified(url: &str, path: &std::path::Path) {
    ok(&jadpo(url, &["migrate", "apply"]));
    ok(&jadpo(url, &["import", "--input", &path.to_string_lossy()]));
    let verified = jadpo(url, &["verify"]);
    ok(&verified);
    assert_eq!(text(&verified).matches("  PASS ").count(), 8, "{}", text(&verified));
}

/// PostgreSQL → SQLite → PostgreSQL: `jadpo verify` passes at each end and the last export
/// equals the first, record for record (states, events with their ids and actors, commands with
/// their times, owners, Sessions).
#[tokio::test]
async fn a_store_round_trips_postgres_sqlite_postgres() {
    let first = PgTestDb::empty().await;
    let store = first.store();
    seed(first.url(), &store).await;
    // An event written before ids were `${runId}:${seq}` keeps its id all the way.
    jadpo_test_harness::lift_history_guard(&store).await.unwrap_or_else(|e| panic!("{e}"));
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let legacy =
        "UPDATE workflow_events SET id = 'evt-legacy-1' WHERE run_id = 'run-1' AND seq = 1";
    tx.execute(legacy, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (a, b, c) =
        (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"), dir.path().join("c.jsonl"));
    export_to(first.url(), &a);
    let sqlite = SqliteTestDb::empty();
    import_verified(&sqlite.url(), &a);
    export_to(&sqlite.url(), &b);
    let last = PgTestDb::empty().await;
    import_verified(last.url(), &b);
    export_to(last.url(), &c);
    let (from, back) = (records(&a), records(&c));
    assert_eq!(from.len(), 2, "one run and one Session");
    assert_eq!(from[0]["run"]["event_ids"]["1"], json!("evt-legacy-1"), "{}", from[0]);
    assert_eq!(from, back, "the round trip changed a record");
    assert_eq!(records(&b), from, "SQLite's export differs");
}

/// Writes to `to` the export of a seeded SQLite store, its records (one JSON value per line)
/// changed by `edit` first.
async fn seeded_export_edited(
    to: &std::path::Path,
    edit: impl FnOnce(&mut Vec<serde_json::Value>),
) {
    let sqlite = SqliteTestDb::empty();
    seed(&sqlite.url(), &sqlite.store()).await;
    let full = to.with_extension("full");
    export_to(&sqlite.url(), &full);
    let content = std::fs::read_to_string(&full).unwrap_or_default();
    let mut lines: Vec<serde_json::Value> =
        content.lines().map(|l| serde_json::from_str(l).unwrap_or_default()).collect();
    edit(&mut lines);
    let text_of: Vec<String> = lines.iter().map(ToString::to_string).collect();
    std::fs::write(to, text_of.join("\n")).unwrap_or_else(|e| panic!("{e}"));
}

/// Into PostgreSQL, a value over its column's width is named (line, run, column, length) and
/// nothing is imported; SQLite, which has no widths, takes the same file.
#[tokio::test]
async fn an_import_into_postgres_checks_every_width_first() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let wide = dir.path().join("wide.jsonl");
    seeded_export_edited(&wide, |lines| {
        lines[1]["run"]["state"]["workflow_version"] = json!("v".repeat(51));
        lines[1]["run"]["owner"] = json!("o".repeat(256));
    })
    .await;
    let pg = PgTestDb::empty().await;
    ok(&jadpo(pg.url(), &["migrate", "apply"]));
    let refused = jadpo(pg.url(), &["import", "--input", &wide.to_string_lossy()]);
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    for words in [
        "nothing was imported",
        "2 values do not fit",
        "line 2: run \"run-1\": workflow_version has 51 characters, over PostgreSQL's 50",
        "line 2: run \"run-1\": owner has 256 characters, over PostgreSQL's 255",
    ] {
        assert!(said.contains(words), "{words:?} not in {said}");
    }
    assert_eq!(runs_in(&pg.store()).await, 0, "a refused import wrote a run");
    let other = SqliteTestDb::empty();
    ok(&jadpo(&other.url(), &["migrate", "apply"]));
    ok(&jadpo(&other.url(), &["import", "--input", &wide.to_string_lossy()]));
}

/// A Session whose context is over the limit a patch enforces is refused at import, on SQLite
/// as on PostgreSQL, naming the Session; nothing is imported (no later patch could change it).
#[tokio::test]
async fn an_import_refuses_a_session_context_over_the_limit() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let big = dir.path().join("big.jsonl");
    let mut id = String::new();
    seeded_export_edited(&big, |lines| {
        let session = lines.iter_mut().find(|l| l.get("session").is_some());
        let session = session.unwrap_or_else(|| panic!("the seed has a Session"));
        id = session["session"]["id"].as_str().unwrap_or_default().to_owned();
        session["session"]["context"] = json!({"notes": "n".repeat(70_000)});
    })
    .await;
    let pg = PgTestDb::empty().await;
    let other = SqliteTestDb::empty();
    for url in [other.url(), pg.url().to_owned()] {
        ok(&jadpo(&url, &["migrate", "apply"]));
        let refused = jadpo(&url, &["import", "--input", &big.to_string_lossy()]);
        let said = text(&refused);
        assert!(!refused.status.success(), "{said}");
        let named = format!("session {id}: a session context may hold at most 65536 bytes");
        assert!(said.contains("nothing was imported") && said.contains(&named), "{said}");
    }
    assert_eq!(runs_in(&pg.store()).await, 0, "a refused import wrote a run");
    assert_eq!(runs_in(&other.store()).await, 0, "a refused import wrote a run");
}

/// An import that stopped part-way continues with `--resume`: what is there already, as the
/// file has it, is skipped, the rest imported; without it the import stops and says to resume;
/// a record there already but different still stops it.
#[tokio::test]
async fn an_interrupted_import_resumes() {
    let source = SqliteTestDb::empty();
    seed(&source.url(), &source.store()).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("export.jsonl");
    export_to(&source.url(), &file);
    let path = file.to_string_lossy().into_owned();
    let pg = PgTestDb::empty().await;
    let target = pg.store();
    ok(&jadpo(pg.url(), &["migrate", "apply"]));
    ok(&jadpo(pg.url(), &["import", "--input", &path]));
    // As if it had stopped after the run: its Session is not there yet.
    target.session_delete("s-1").await.unwrap_or_else(|e| panic!("{e}"));
    let stopped = jadpo(pg.url(), &["import", "--input", &path]);
    assert!(!stopped.status.success(), "{}", text(&stopped));
    assert!(text(&stopped).contains("again with --resume"), "{}", text(&stopped));
    let resumed = jadpo(pg.url(), &["import", "--input", &path, "--resume", "--json"]);
    ok(&resumed);
    let summary: serde_json::Value = serde_json::from_slice(&resumed.stdout).unwrap_or_default();
    assert_eq!(summary["runs"], json!(0), "{summary}");
    assert_eq!((summary["sessions"].clone(), summary["skipped"].clone()), (json!(1), json!(1)));
    assert!(target.session_get("s-1").await.unwrap_or_default().is_some(), "not resumed");
    let verified = jadpo(pg.url(), &["verify"]);
    ok(&verified);
    // A run there already but at another revision is not the file's: the import stops.
    let mut tx = target.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let moved = "UPDATE workflow_executions SET revision = revision + 1 WHERE run_id = 'run-1'";
    tx.execute(moved, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let differs = jadpo(pg.url(), &["import", "--input", &path, "--resume"]);
    assert!(!differs.status.success(), "{}", text(&differs));
    assert!(text(&differs).contains("differs from the file's"), "{}", text(&differs));
}

/// The fingerprint an export compares before and after moves with every kind of write: a
/// transition, a Session change, a deletion. (An export that raced such a write ends without
/// its end marker, and no import takes it.)
async fn fingerprint_moves(url: &str, store: &dyn Store) {
    seed(url, store).await;
    let start = store.workflow_fingerprint().await.unwrap_or_else(|e| panic!("{e}"));
    let again = store.workflow_fingerprint().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, start, "reading moved the fingerprint");
    let session = store.session_get("s-1").await.unwrap_or_default();
    let revision = session.map_or(0, |s| s.revision);
    let context = json!({"x": 1});
    let updated =
        store.session_update_context("s-1", "alice", &context, revision, true, Utc::now());
    assert!(updated.await.unwrap_or_else(|e| panic!("{e}")), "the Session did not change");
    let after_session = store.workflow_fingerprint().await.unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(after_session, start, "a Session change did not move it");
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let moved = "UPDATE workflow_executions SET revision = revision + 1 WHERE run_id = 'run-1'";
    tx.execute(moved, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let after_run = store.workflow_fingerprint().await.unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(after_run, after_session, "a transition did not move it");
    store.execution_delete("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    let after_delete = store.workflow_fingerprint().await.unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(after_delete, after_run, "a deletion did not move it");
}

/// The fingerprint an export compares before and after moves with every kind of write (a
/// Session change, a transition, a deletion), on both adapters. An export that raced such a
/// write ends without its end marker, and no import takes it.
#[tokio::test]
async fn every_write_moves_the_fingerprint_an_export_checks() {
    let sqlite = SqliteTestDb::empty();
    fingerprint_moves(&sqlite.url(), &sqlite.store()).await;
    let pg = PgTestDb::empty().await;
    fingerprint_moves(pg.url(), &pg.store()).await;
}

/// Runs and Sessions without an owner (made before owners were recorded, or imported) reach no
/// principal; `jadpo runs adopt` and `jadpo sessions adopt` give them one, on both adapters:
/// a bad owner, a blank reason, an unknown id and an owned one are refused with nothing changed;
/// the adoption is recorded as an operator action with the reason.
#[tokio::test]
async fn an_operator_gives_an_ownerless_run_and_session_an_owner() {
    let sqlite = SqliteTestDb::empty();
    adoptions(&sqlite.url(), &sqlite.store()).await;
    let pg = PgTestDb::empty().await;
    adoptions(pg.url(), &pg.store()).await;
}

async fn adoptions(url: &str, store: &dyn Store) {
    seed(url, store).await;
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.execute("UPDATE workflow_executions SET owner = NULL", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.execute("UPDATE sessions SET owner = NULL", &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let adopt = |what: &str, args: &[&str]| {
        jadpo(url, &[&[what, "adopt", "--operator", "dora"][..], args].concat())
    };
    for (args, said) in [
        (&["run-1", "--owner", "alice", "--reason", "legacy"][..], "is not an owner"),
        (&["run-1", "--owner", "user:", "--reason", "legacy"][..], "is not an owner"),
        (&["run-1", "--owner", "user:alice", "--reason", " "][..], "--reason TEXT"),
        (&["nope", "--owner", "user:alice", "--reason", "legacy"][..], "no run nope"),
    ] {
        let refused = adopt("runs", args);
        assert_eq!(refused.status.code(), Some(1), "{args:?}: {}", text(&refused));
        assert!(text(&refused).contains(said), "{args:?}: {}", text(&refused));
    }
    let owner = store.execution_owner("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(owner, None, "a refused adoption changed the run");

    ok(&adopt("runs", &["run-1", "--owner", "user:alice", "--reason", "pre-owner import"]));
    let owner = store.execution_owner("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(owner.as_deref(), Some("user:alice"));
    let again = adopt("runs", &["run-1", "--owner", "user:mallory", "--reason", "mine"]);
    assert!(text(&again).contains("owned by user:alice already"), "{}", text(&again));
    let owner = store.execution_owner("run-1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(owner.as_deref(), Some("user:alice"), "an owned run changed hands");

    let before = store.session_get("s-1").await.unwrap_or_else(|e| panic!("{e}"));
    let before = before.unwrap_or_else(|| panic!("no Session"));
    let unknown = adopt("sessions", &["s-9", "--owner", "user:alice", "--reason", "legacy"]);
    assert!(text(&unknown).contains("no Session s-9"), "{}", text(&unknown));
    ok(&adopt("sessions", &["s-1", "--owner", "user:alice", "--reason", "pre-owner import"]));
    let after = store.session_get("s-1").await.unwrap_or_else(|e| panic!("{e}"));
    let after = after.unwrap_or_else(|| panic!("no Session"));
    assert_eq!(after.owner.as_deref(), Some("user:alice"));
    assert_eq!(after.revision, before.revision + 1, "the Session's revision moves on");
    assert_eq!((after.context, after.active_run_id), (before.context, before.active_run_id));
    let owned = adopt("sessions", &["s-1", "--owner", "user:bob", "--reason", "mine"]);
    assert_eq!(owned.status.code(), Some(1), "{}", text(&owned));

    let log = jadpo(url, &["actions", "list", "--json"]);
    ok(&log);
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(log.contains("run.adopt") && log.contains("session.adopt"), "{log}");
    assert_eq!(log.matches("pre-owner import").count(), 2, "{log}");
}
