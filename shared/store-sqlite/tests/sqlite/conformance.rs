//! The conformance suite on SQLite files, plus what only SQLite has (WAL, `:memory:`, the
//! driver escape hatch).

use std::sync::Arc;

use jadpo_core::{Dialect, Store, SystemClock, TransactionalStore};
use jadpo_engine::migrate;
use jadpo_store_conformance::{Fixture, conformance_tests};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions, SqliteTx};
use jadpo_test_harness::SqliteTestDb;

struct SqliteFixture(SqliteTestDb);

impl Fixture for SqliteFixture {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn open(&self) -> Arc<dyn Store> {
        Arc::new(self.0.store())
    }
}

async fn fixture() -> SqliteFixture {
    SqliteFixture(SqliteTestDb::empty())
}

conformance_tests!(fixture());

#[tokio::test]
async fn file_databases_use_wal_and_enforce_foreign_keys() {
    let db = SqliteTestDb::empty();
    let store = db.store();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let sqlite = tx.driver().downcast_mut::<SqliteTx>().unwrap_or_else(|| panic!("not a SqliteTx"));
    let mode: String = sqlite
        .connection()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{e}"));
    let fks: i64 =
        sqlite.connection().query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap_or_default();
    assert_eq!(mode, "wal");
    assert_eq!(fks, 1);
}

#[tokio::test]
async fn memory_databases_migrate_and_vanish() {
    let open = || {
        Sqlite::open(
            "main",
            &SqliteLocation::Memory,
            &SqliteOptions::default(),
            Arc::new(SystemClock),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let store = open();
    let catalog = jadpo_store_sqlite::migrate::builtin_catalog();
    let report = migrate::apply(&store, &catalog).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.applied.len(), 3 + 27, "v1–v3 and the jadpo ledger's v1–v27");
    assert!(migrate::apply(&open(), &catalog).await.is_ok_and(|r| r.applied.len() == 3 + 27));
}

#[tokio::test]
async fn the_escape_hatch_writes_inside_the_same_transaction() {
    let db = SqliteTestDb::migrated().await;
    let store = db.store();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    {
        let sqlite =
            tx.driver().downcast_mut::<SqliteTx>().unwrap_or_else(|| panic!("not a SqliteTx"));
        sqlite
            .connection()
            .execute("INSERT INTO sessions (id, user_id, created_at, updated_at) VALUES ('x', 'u', 0, 0)", [])
            .unwrap_or_else(|e| panic!("{e}"));
    }
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let rows = tx.query("SELECT id FROM sessions", &[]).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(rows.is_empty(), "the driver-level write escaped the rolled-back transaction");
}

#[tokio::test]
async fn a_second_process_waits_for_the_writer_then_proceeds() {
    let db = SqliteTestDb::migrated().await;
    let (first, second) = (db.store(), db.store());
    let mut holding = first.begin().await.unwrap_or_else(|e| panic!("{e}"));
    holding
        .execute(
            "INSERT INTO sessions (id, user_id, created_at, updated_at) VALUES ('a', 'u', 0, 0)",
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let waiter = tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread().build();
        rt.unwrap_or_else(|e| panic!("{e}")).block_on(async move {
            let mut tx = second.begin().await?;
            let rows = tx.query("SELECT id FROM sessions", &[]).await?;
            tx.rollback().await?;
            Ok::<usize, jadpo_core::StoreError>(rows.len())
        })
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    holding.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let seen = waiter.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen, 1, "the second connection should see the committed row after waiting");
}
