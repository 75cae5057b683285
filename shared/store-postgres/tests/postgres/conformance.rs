//! The conformance suite on PostgreSQL (one database per test), plus what only PostgreSQL has:
//! the driver escape hatch, the DBA schema script and the connection budget.

use std::sync::Arc;
use std::time::Duration;

use jadpo_core::{Dialect, Store, StoreErrorKind, TransactionalStore};
use jadpo_engine::migrate;
use jadpo_schema::migrate::Ledger;
use jadpo_store_conformance::{Fixture, conformance_tests};
use jadpo_store_postgres::{PgOptions, PgTx, Postgres, builtin_catalog, schema_sql};
use jadpo_test_harness::PgTestDb;

struct PgFixture(PgTestDb);

impl Fixture for PgFixture {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn open(&self) -> Arc<dyn Store> {
        Arc::new(self.0.store())
    }
}

async fn fixture() -> PgFixture {
    PgFixture(PgTestDb::empty().await)
}

conformance_tests!(fixture());

#[tokio::test]
async fn the_escape_hatch_reaches_the_driver_inside_the_transaction() {
    let db = PgTestDb::migrated().await;
    let store = db.store();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let pg = tx.driver().downcast_mut::<PgTx>().unwrap_or_else(|| panic!("not a PgTx"));
    pg.client()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .execute("INSERT INTO sessions (id, user_id, created_at, updated_at) VALUES ('x', 'u', now(), now())", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let rows = tx.query("SELECT id FROM sessions", &[]).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(rows.is_empty(), "the driver-level write escaped the rolled-back transaction");
}

#[tokio::test]
async fn the_schema_script_builds_the_same_schema_and_reruns_as_a_no_op() {
    let db = PgTestDb::empty().await;
    let store = db.store();
    let script = schema_sql(&builtin_catalog(), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..2 {
        db.run_script(&script).await;
    }
    let status =
        migrate::status(&store, &builtin_catalog()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.len(), builtin_catalog().all().count(), "{status:?}");
    assert!(status.iter().all(|s| s.state.label() == "applied"), "{status:?}");
    let again = migrate::apply(&store, &builtin_catalog()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(again.applied.is_empty());
}

#[tokio::test]
async fn a_pre_ledger_database_is_adopted() {
    let db = PgTestDb::empty().await;
    let store = db.store();
    let v1 = builtin_catalog().all().next().map(|m| m.sql.clone()).unwrap_or_default();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(&v1).await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(
        "CREATE TABLE invariant_schema_migrations (version INTEGER PRIMARY KEY, \
              description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT NOW()); \
              INSERT INTO invariant_schema_migrations (version, description) VALUES (1, 'initial')",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let report = migrate::apply(&store, &builtin_catalog()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.adopted.len(), 1);
    let jadpo = builtin_catalog().all().filter(|m| m.ledger == Ledger::Jadpo).count();
    assert_eq!(jadpo, 27, "the jadpo ledger's v1–v27");
    assert_eq!(report.applied.len(), 3 + jadpo, "v2–v4 and the jadpo ledger's versions");
}

#[tokio::test]
async fn the_pool_never_opens_more_than_its_budget() {
    let db = PgTestDb::migrated().await;
    let options = PgOptions {
        pool_size: 2,
        acquire_timeout: Duration::from_millis(300),
        ..PgOptions::default()
    };
    let store = Postgres::connect("main", db.url(), &options).unwrap_or_else(|e| panic!("{e}"));
    let a = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let b = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let third =
        store.begin().await.err().unwrap_or_else(|| panic!("a third connection was opened"));
    assert_eq!(third.kind(), StoreErrorKind::Unavailable, "{third}");
    assert!(third.is_retryable());
    drop((a, b));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(store.begin().await.is_ok(), "connections were not returned after rollback");
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_and_retryable() {
    let options = PgOptions { connect_timeout: Duration::from_millis(500), ..PgOptions::default() };
    let store = Postgres::connect("main", "postgres://postgres@127.0.0.1:1/none", &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let err = store.ping().await.err().unwrap_or_else(|| panic!("connected to port 1"));
    assert_eq!(err.kind(), StoreErrorKind::Unavailable, "{err}");
}

#[tokio::test]
async fn ints_are_range_checked_against_the_column_type() {
    let db = PgTestDb::migrated().await;
    let store = db.store();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let err = tx
        .execute(
            "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) VALUES ('e', 'r', $1, 't', '{}', 0)",
            &[(i64::from(i32::MAX) + 1).into()],
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("an out-of-range seq was accepted"));
    assert_eq!(err.kind(), StoreErrorKind::Invalid, "{err}");
}

/// `now()` twice, a moment apart, in one transaction: equal only if `BEGIN` went out first.
async fn in_one_transaction(tx: &mut dyn jadpo_core::Transaction) -> bool {
    let at = |rows: Vec<jadpo_core::Row>| rows.first().map(|r| format!("{:?}", r.get("t")));
    let first = tx.query("SELECT now()::text AS t", &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = tx.query("SELECT now()::text AS t", &[]).await.unwrap_or_else(|e| panic!("{e}"));
    at(first) == at(second)
}

/// Whether a connection to `db` sits idle inside a transaction (asked on a connection of its own).
async fn left_open(db: &PgTestDb) -> bool {
    let sql = "SELECT count(*) AS n FROM pg_stat_activity \
               WHERE datname = current_database() AND state = 'idle in transaction'";
    let rows = db.store().query_once(sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    rows.first().and_then(|r| r.get_i64("n").ok()).unwrap_or_else(|| panic!("no count")) > 0
}

#[tokio::test]
async fn begin_goes_out_with_the_first_statement_and_an_empty_transaction_sends_nothing() {
    let db = PgTestDb::empty().await;
    let options = PgOptions { pool_size: 1, ..PgOptions::default() };
    let store = Postgres::connect("main", db.url(), &options).unwrap_or_else(|e| panic!("{e}"));
    // The first statement runs inside the transaction its BEGIN opened.
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        in_one_transaction(tx.as_mut()).await,
        "the first statement ran outside the transaction"
    );
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!left_open(&db).await, "committed, yet still open");
    // Committed, rolled back or dropped without a statement: the connection is clean.
    let tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!left_open(&db).await, "an empty commit left a transaction open");
    let tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    drop(store.begin().await.unwrap_or_else(|e| panic!("{e}")));
    assert!(!left_open(&db).await, "an empty rollback or drop left a transaction open");
    // A first statement that fails leaves a transaction to roll back, and then none.
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let failed = tx.execute("SELECT * FROM no_such_table", &[]).await;
    assert!(failed.is_err(), "a statement on a missing table succeeded");
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!left_open(&db).await, "a failed first statement left a transaction open");
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(in_one_transaction(tx.as_mut()).await, "the next transaction is not one");
    drop(tx);
}
