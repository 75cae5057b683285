//! `jadpo snapshot`, `jadpo check` and `jadpo migrate drop-unplaced`, the real binary on the
//! sample shop: the committed snapshots are what the migrations make (on a scratch database of
//! each dialect), and `jadpo check` passes; a drifted copy of a database, a stale or missing
//! snapshot, fails it with the finding that names what drifted.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use jadpo_core::TransactionalStore;
use jadpo_core::ports::SchemaIntrospection;
use jadpo_schema::snapshot::Snapshot;
use jadpo_test_harness::{PgTestDb, SqliteTestDb};
use serde_json::Value;

use common::text;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed() -> PathBuf {
    root().join("migrations/snapshots")
}

/// Runs `jadpo args` with the given store URLs (`(variable, url)`) and no others.
fn jadpo(urls: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jadpo"));
    cmd.args(args).env("RUST_LOG", "warn").env_remove("JADPO_SCRATCH_DATABASE_URL");
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("DATABASE_URL")) {
        cmd.env_remove(key);
    }
    for (variable, url) in urls {
        cmd.env(variable, url);
    }
    cmd.output().unwrap_or_else(|e| panic!("cannot run jadpo: {e}"))
}

fn dir_arg(dir: &Path) -> String {
    dir.display().to_string()
}

fn findings(out: &Output) -> Vec<String> {
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(out)));
    let list = doc["findings"].as_array().cloned().unwrap_or_default();
    list.iter().map(|f| f["code"].as_str().unwrap_or("?").to_owned()).collect()
}

/// The committed snapshots are what the migrations make on both dialects, and the shop passes.
#[tokio::test]
async fn the_shop_passes_and_its_snapshots_are_current() {
    let scratch = PgTestDb::empty().await;
    let dir = dir_arg(&committed());
    let out = jadpo(&[], &["check", "--dir", &dir, "--scratch-url", scratch.url()]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("0 error(s), 0 notice(s)"), "{said}");
    for what in ["main migrations (postgres)", "warehouse migrations (sqlite)"] {
        assert!(said.contains(what), "{said}");
    }

    let fresh = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out =
        jadpo(&[], &["snapshot", "--dir", &dir_arg(fresh.path()), "--scratch-url", scratch.url()]);
    assert!(out.status.success(), "{}", text(&out));
    for file in [
        "postgres/main.json",
        "postgres/warehouse.json",
        "sqlite/main.json",
        "sqlite/warehouse.json",
    ] {
        let made = std::fs::read_to_string(fresh.path().join(file)).unwrap_or_default();
        let kept = std::fs::read_to_string(committed().join(file)).unwrap_or_default();
        assert!(
            !made.is_empty() && made == kept,
            "{file} differs from what `jadpo snapshot` writes"
        );
    }
    let again = jadpo(&[], &["snapshot", "--dir", &dir_arg(fresh.path()), "--dialect", "sqlite"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("unchanged"), "{}", text(&again));
}

/// A database drifted by hand fails the check, naming the drift; the JSON says the same.
#[tokio::test]
async fn a_drifted_database_fails_the_check() {
    let dir = dir_arg(&committed());
    let db = SqliteTestDb::empty();
    let url = db.url();
    let applied = jadpo(&[("DATABASE_URL", &url)], &["migrate", "apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    let clean = jadpo(&[("DATABASE_URL", &url)], &["check", "--dialect", "sqlite", "--dir", &dir]);
    assert!(clean.status.success(), "a freshly migrated database passes: {}", text(&clean));
    assert!(String::from_utf8_lossy(&clean.stdout).contains("main database (sqlite)"));

    let store = db.store();
    let alter = store.execute_once("ALTER TABLE jadpo_outbox ADD COLUMN note TEXT", &[]).await;
    alter.unwrap_or_else(|e| panic!("{e}"));
    let out = jadpo(&[("DATABASE_URL", &url)], &["check", "--dialect", "sqlite", "--dir", &dir]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("error  database.column_added"), "{said}");
    assert!(said.contains("column jadpo_outbox.note (TEXT) is not in the snapshot"), "{said}");
    assert!(said.contains("fix: "), "{said}");
    let json = jadpo(
        &[("DATABASE_URL", &url)],
        &["check", "--dialect", "sqlite", "--dir", &dir, "--json"],
    );
    assert_eq!(findings(&json), ["database.column_added"]);

    let pg = PgTestDb::empty().await;
    let applied = jadpo(&[("DATABASE_URL", pg.url())], &["migrate", "apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    pg.store()
        .execute_once("DROP INDEX jadpo_outbox_created_at_idx", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let args =
        ["check", "--dialect", "postgres", "--dir", &dir, "--scratch-url", pg.url(), "--json"];
    let out = jadpo(&[("DATABASE_URL", pg.url())], &args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(findings(&out), ["database.index_missing"]);
}

/// A snapshot older than the migrations, edited, missing or unreadable fails, and says which.
#[test]
fn a_stale_or_missing_snapshot_fails_the_check() {
    let copy = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let sqlite = copy.path().join("sqlite");
    std::fs::create_dir_all(&sqlite).unwrap_or_else(|e| panic!("{e}"));
    let main = std::fs::read_to_string(committed().join("sqlite/main.json")).unwrap_or_default();
    let mut older = Snapshot::parse(&main, "main.json").unwrap_or_else(|e| panic!("{e}"));
    older.migrations.insert("jadpo".to_owned(), 17);
    for t in older.tables.iter_mut().filter(|t| t.name == "jadpo_steps") {
        t.columns.retain(|c| c.name != "encoding");
    }
    std::fs::write(sqlite.join("main.json"), older.to_text()).unwrap_or_else(|e| panic!("{e}"));
    let args = [
        "check",
        "--dialect",
        "sqlite",
        "--store",
        "main",
        "--dir",
        &dir_arg(copy.path()),
        "--json",
    ];
    let out = jadpo(&[], &args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(findings(&out), ["migration.out_of_date"]);
    let said = String::from_utf8_lossy(&out.stdout);
    let named = "predates jadpo migration 18 (encodings), which adds jadpo_steps.encoding";
    assert!(said.contains(named), "{said}");

    let args = [
        "check",
        "--dialect",
        "sqlite",
        "--store",
        "warehouse",
        "--dir",
        &dir_arg(copy.path()),
        "--json",
    ];
    assert_eq!(findings(&jadpo(&[], &args)), ["snapshot.missing"]);

    std::fs::write(sqlite.join("main.json"), "{\"format\": \"something else\"}")
        .unwrap_or_else(|e| panic!("{e}"));
    let out = jadpo(
        &[],
        &["check", "--dialect", "sqlite", "--store", "main", "--dir", &dir_arg(copy.path())],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("this build reads \"jadpo.snapshot\" version 1"), "{}", text(&out));
}

/// Bad input is refused with what to do: PostgreSQL without a scratch server, an unknown store.
#[test]
fn bad_input_is_refused_clearly() {
    let out = jadpo(&[], &["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("--scratch-url"), "{}", text(&out));
    let out = jadpo(&[], &["snapshot", "--store", "nope", "--dialect", "sqlite"]);
    assert!(text(&out).contains("declares no store \"nope\""), "{}", text(&out));
    let out = jadpo(&[], &["check", "--dialect", "oracle"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}

/// A store made whole before placement keeps working, its unplaced tables a notice; `migrate
/// drop-unplaced` lists them, drops them only with --yes, and the notice goes.
#[tokio::test]
async fn unplaced_tables_are_a_notice_until_dropped_deliberately() {
    let dir = dir_arg(&committed());
    let (main, warehouse) = (SqliteTestDb::migrated().await, SqliteTestDb::migrated().await);
    let urls = [("DATABASE_URL", main.url()), ("DATABASE_URL_WAREHOUSE", warehouse.url())];
    let urls: Vec<(&str, &str)> = urls.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let applied = jadpo(&urls, &["migrate", "apply"]);
    assert!(applied.status.success(), "{}", text(&applied));
    let out =
        jadpo(&urls, &["check", "--dialect", "sqlite", "--dir", &dir, "--store", "warehouse"]);
    assert!(out.status.success(), "notices do not fail: {}", text(&out));
    let said = text(&out);
    assert!(said.contains("notice placement.unplaced") && said.contains("jadpo_flags"), "{said}");

    let listed = jadpo(&urls, &["migrate", "drop-unplaced", "--store", "warehouse"]);
    let said = text(&listed);
    assert!(said.contains("would drop") && said.contains("nothing was changed"), "{said}");
    assert!(
        warehouse
            .store()
            .schema_tables()
            .await
            .unwrap_or_default()
            .contains(&"jadpo_flags".to_owned())
    );
    let dropped =
        jadpo(&urls, &["migrate", "drop-unplaced", "--store", "warehouse", "--yes", "--json"]);
    let doc: Value = serde_json::from_slice(&dropped.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&dropped)));
    assert_eq!(doc["dropped"], true, "{doc}");
    let out = jadpo(
        &urls,
        &["check", "--dialect", "sqlite", "--dir", &dir, "--store", "warehouse", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(findings(&out).is_empty(), "{}", text(&out));
}

/// Without `--dir`, `jadpo check` run in a subfolder of the project reads the committed
/// snapshots (found upwards, as git finds its own); run outside any project, it and `jadpo
/// snapshot` say where they looked and write nothing.
#[test]
fn the_snapshots_are_found_from_a_subfolder_and_never_made_elsewhere() {
    let run_in = |dir: &Path, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_jadpo"));
        cmd.args(args).current_dir(dir).env("RUST_LOG", "warn");
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("DATABASE_URL")) {
            cmd.env_remove(key);
        }
        cmd.output().unwrap_or_else(|e| panic!("cannot run jadpo: {e}"))
    };
    let sub = root().join("shared/cli");
    let out = run_in(&sub, &["check", "--dialect", "sqlite", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("migrations/snapshots/sqlite/main.json"), "{said}");
    let elsewhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for verb in ["check", "snapshot"] {
        let out = run_in(elsewhere.path(), &[verb, "--dialect", "sqlite"]);
        assert!(!out.status.success(), "{verb}: {}", text(&out));
        assert!(text(&out).contains("or give --dir"), "{verb}: {}", text(&out));
    }
    let left = std::fs::read_dir(elsewhere.path()).map(Iterator::count).unwrap_or(0);
    assert_eq!(left, 0, "a snapshot was written outside the project");
}
