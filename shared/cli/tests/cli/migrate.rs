//! `jadpo migrate` end to end: the real binary against a real SQLite file and PostgreSQL.

use crate::common;

use std::process::Output;

use jadpo_core::TransactionalStore;
use jadpo_test_harness::{PgTestDb, SqliteTestDb};
use serde_json::Value;

/// How many migrations the jadpo ledger has.
const JADPO: usize = 27;
/// How many migrations the shop adds to store `main` (orders, sales summaries, customers,
/// services, payments, invoices).
const SHOP: usize = 6;

fn jadpo(database_url: Option<&str>, args: &[&str]) -> Output {
    common::jadpo_with(database_url, args)
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "jadpo failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn states(out: &Output) -> Vec<String> {
    let doc: Value = serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("not JSON: {e}"));
    doc["stores"][0]["migrations"]
        .as_array()
        .map(|list| list.iter().map(|m| m["state"].as_str().unwrap_or("?").to_owned()).collect())
        .unwrap_or_default()
}

fn round_trip(url: &str, versions: usize) {
    assert_eq!(
        states(&jadpo(Some(url), &["migrate", "status", "--json"])),
        vec!["pending"; versions + JADPO], // the workflow ledger (built-in and the shop's), then jadpo's
    );
    let applied = stdout(&jadpo(Some(url), &["migrate", "apply"]));
    assert_eq!(applied.matches("applied  workflow").count(), versions, "{applied}");
    assert!(applied.contains("applied  workflow 1 initial"), "{applied}");
    assert!(applied.contains("applied  jadpo 1 pipeline"), "{applied}");
    assert_eq!(applied.matches("applied  jadpo ").count(), JADPO, "{applied}");
    let again = stdout(&jadpo(Some(url), &["migrate", "apply"]));
    assert!(again.contains("up to date: nothing to apply"), "{again}");
    assert_eq!(
        states(&jadpo(Some(url), &["migrate", "status", "--json"])),
        vec!["applied"; versions + JADPO]
    );
    let human = stdout(&jadpo(Some(url), &["migrate", "status"]));
    assert!(
        human.lines().nth(1) == Some("  STATE      LEDGER VERSION NAME (APPLIED AT)"),
        "a header row under the store's line: {human}"
    );
    assert!(
        human.contains("store main (") && human.contains("applied    workflow   1 initial ("),
        "{human}"
    );
}

#[test]
fn sqlite_apply_then_status() {
    let db = SqliteTestDb::empty();
    // `status` reads an existing database: a path with none is refused, and stays empty.
    let missing = jadpo(Some(&db.url()), &["migrate", "status"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success() && err.contains("does not exist"), "{err}");
    assert!(!db.path().exists(), "migrate status created the database");
    std::fs::File::create(db.path()).unwrap_or_else(|e| panic!("{e}")); // an empty database
    round_trip(&db.url(), 3 + SHOP); // built-in v1–v3 and the shop's
}

#[tokio::test]
async fn postgres_apply_then_status() {
    let db = PgTestDb::empty().await;
    round_trip(db.url(), 4 + SHOP); // built-in v1–v4 and the shop's
    assert!(
        stdout(&jadpo(Some(db.url()), &["migrate", "status"])).contains("store main (postgres://")
    );
}

#[tokio::test]
async fn two_applies_at_once_on_postgres_apply_once() {
    let db = PgTestDb::empty().await;
    let url = db.url().to_owned();
    let spawn = |url: String| {
        std::thread::spawn(move || jadpo(Some(&url), &["migrate", "apply", "--json"]))
    };
    let (a, b) = (spawn(url.clone()), spawn(url));
    let outputs = [a, b].map(|h| h.join().unwrap_or_else(|_| panic!("thread panicked")));
    let applied: Vec<usize> = outputs
        .iter()
        .map(|o| {
            let doc: Value = serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}"));
            doc["stores"][0]["applied"].as_array().map_or(0, Vec::len)
        })
        .collect();
    assert_eq!(applied.iter().sum::<usize>(), 4 + SHOP + JADPO, "{applied:?}");
    assert!(applied.contains(&0), "both processes applied migrations: {applied:?}");
}

#[tokio::test]
async fn an_edited_migration_is_refused_by_the_cli() {
    let db = SqliteTestDb::empty();
    stdout(&jadpo(Some(&db.url()), &["migrate", "apply"]));
    {
        let store = db.store();
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        tx.execute(
            "UPDATE jadpo_migrations SET checksum = $1 WHERE ledger = 'workflow' AND version = 2",
            &["0".repeat(64).into()],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(
        states(&jadpo(Some(&db.url()), &["migrate", "status", "--json"])),
        [vec!["applied", "changed", "applied"], vec!["applied"; SHOP + JADPO]].concat()
    );
    let out = jadpo(Some(&db.url()), &["migrate", "apply"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("workflow migration 2 (session_active_run) was edited after it was applied"),
        "{err}"
    );
}

#[test]
fn sql_prints_the_postgres_schema_without_a_database() {
    let out = stdout(&jadpo(None, &["migrate", "sql"]));
    assert!(out.contains("CREATE TABLE IF NOT EXISTS invariant_schema_migrations"));
    assert_eq!(
        out.matches("DO $jadpo_block$").count(),
        4 + SHOP + JADPO,
        "v1–v4, the shop's, jadpo's"
    );
    assert!(out.contains("CREATE TABLE shop_orders"));
    assert!(out.contains("CREATE TABLE jadpo_deliveries"));
    assert!(out.contains("ALTER TABLE sessions ADD COLUMN IF NOT EXISTS context_revision BIGINT"));
}

/// What a PostgreSQL database's schema is, as sorted lines: every column (type, nullability,
/// default), index, trigger and function of the public schema, and the migration ledgers' rows.
const CATALOG: &str = "\
    SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable \
        || ' ' || coalesce(column_default, '') AS line \
      FROM information_schema.columns WHERE table_schema = 'public' \
    UNION ALL SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes \
      WHERE schemaname = 'public' \
    UNION ALL SELECT 'trigger ' || tgrelid::regclass::text || ' ' || pg_get_triggerdef(oid) \
      FROM pg_trigger WHERE NOT tgisinternal \
    UNION ALL SELECT 'function ' || p.proname || ' ' || md5(p.prosrc) FROM pg_proc p \
      JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' \
    UNION ALL SELECT 'migration ' || ledger || ' ' || version || ' ' || name || ' ' || checksum \
      FROM jadpo_migrations \
    UNION ALL SELECT 'workflow ledger ' || version FROM invariant_schema_migrations \
    ORDER BY 1";

async fn catalog(db: &PgTestDb) -> Vec<String> {
    let rows = db.store().query_once(CATALOG, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    rows.iter().map(|r| r.get_str("line").unwrap_or_default().to_owned()).collect()
}

/// `jadpo migrate sql` run through `psql`'s way (its own transaction, twice) and `jadpo migrate
/// apply` make the same database: the same tables, indexes, functions, ledgers — and the audit
/// triggers on the audited tables.
#[tokio::test]
async fn the_schema_script_and_apply_make_the_same_database() {
    let (applied, scripted) = (PgTestDb::empty().await, PgTestDb::empty().await);
    stdout(&jadpo(Some(applied.url()), &["migrate", "apply"]));
    let script = stdout(&jadpo(None, &["migrate", "sql"]));
    for _ in 0..2 {
        scripted.run_script(&script).await;
    }
    let (by_apply, by_script) = (catalog(&applied).await, catalog(&scripted).await);
    let audit = by_apply.iter().find(|l| l.starts_with("trigger shop_orders "));
    assert!(audit.is_some_and(|l| l.contains("jadpo_audit_row")), "{by_apply:#?}");
    let only_apply: Vec<_> = by_apply.iter().filter(|l| !by_script.contains(l)).collect();
    let only_script: Vec<_> = by_script.iter().filter(|l| !by_apply.contains(l)).collect();
    assert!(
        only_apply.is_empty() && only_script.is_empty(),
        "only after apply: {only_apply:#?}\nonly after the script: {only_script:#?}"
    );
}

#[test]
fn missing_or_bad_input_fails_clearly_and_changes_nothing() {
    let out = jadpo(None, &["migrate", "status"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("set DATABASE_URL"));
    let db = SqliteTestDb::empty();
    let out = jadpo(Some(&db.url()), &["migrate", "apply", "--store", "warehouse"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("store \"warehouse\" has no URL here"));
    assert!(!db.path().exists(), "a refused command created the database");
    let out = jadpo(Some("mysql://h/db"), &["migrate", "apply"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("must start with postgres://"));
    let out = jadpo(None, &["migrate", "sql", "--store", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("declares no store \"nope\""));
    let out = jadpo(None, &["migrate", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}
