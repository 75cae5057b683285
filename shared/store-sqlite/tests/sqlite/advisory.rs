//! An advisory write (a relay mark) commits without syncing the WAL and leaves the connection
//! syncing every other commit as before, whether the statement succeeded or failed.

use std::sync::Arc;

use jadpo_core::{SqlValue, SystemClock, TransactionalStore};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};

async fn synchronous(store: &dyn TransactionalStore) -> i64 {
    let rows = store.query_once("PRAGMA synchronous", &[]).await;
    let rows = rows.unwrap_or_else(|e| panic!("{e}"));
    rows[0].get_i64("synchronous").unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn an_advisory_write_lands_and_every_other_commit_is_synced_as_before() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let location = SqliteLocation::File(dir.path().join("main.db"));
    let store = Sqlite::open("main", &location, &SqliteOptions::default(), Arc::new(SystemClock));
    let store = store.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(synchronous(&store).await, 2, "a file database syncs every commit (FULL)");
    let create = store.execute_once("CREATE TABLE marks (id TEXT PRIMARY KEY, at INTEGER)", &[]);
    create.await.unwrap_or_else(|e| panic!("{e}"));
    let mark = "INSERT INTO marks (id, at) VALUES ($1, $2)";
    let params = [SqlValue::from("d-1"), SqlValue::from(1_i64)];
    let changed = store.execute_advisory(mark, &params).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(changed, 1);
    assert_eq!(synchronous(&store).await, 2, "the advisory write left synchronous lowered");
    let repeated = store.execute_advisory(mark, &params).await;
    assert!(repeated.is_err(), "a duplicate key is still an error: {repeated:?}");
    assert_eq!(synchronous(&store).await, 2, "a failed advisory write left synchronous lowered");
    let rows = store.query_once("SELECT count(*) AS n FROM marks", &[]).await;
    let n = rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default();
    assert_eq!(n, 1);
}
