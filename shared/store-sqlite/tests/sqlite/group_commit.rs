//! Group commit: transactions that meet at the store's connection share one `COMMIT`, each
//! commit returns only once that `COMMIT` is done, and a member's rollback, or a caller that
//! stops waiting, leaves the others' work committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jadpo_core::{SqlValue, SystemClock, TransactionalStore};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions, SqliteStore};

fn open(path: &std::path::Path, busy: Duration) -> SqliteStore {
    let options = SqliteOptions { busy_timeout: busy, ..SqliteOptions::default() };
    let store = Sqlite::open(
        "main",
        &SqliteLocation::File(path.to_owned()),
        &options,
        Arc::new(SystemClock),
    );
    store.unwrap_or_else(|e| panic!("{e}"))
}

async fn fresh() -> (tempfile::TempDir, Arc<SqliteStore>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = open(&dir.path().join("main.db"), Duration::from_secs(5));
    let create = store.execute_once("CREATE TABLE items (id TEXT PRIMARY KEY)", &[]).await;
    create.unwrap_or_else(|e| panic!("{e}"));
    (dir, Arc::new(store))
}

async fn insert(tx: &mut dyn jadpo_core::Transaction, id: &str) {
    let sql = "INSERT INTO items (id) VALUES ($1)";
    tx.execute(sql, &[SqlValue::from(id)]).await.unwrap_or_else(|e| panic!("insert {id}: {e}"));
}

async fn count(tx: &mut dyn jadpo_core::Transaction, id: &str) -> i64 {
    let rows = tx.query("SELECT count(*) AS n FROM items WHERE id = $1", &[id.into()]).await;
    rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_else(|e| panic!("{e}"))
}

/// The ids committed, read through a second connection to the file (another process's view).
async fn committed(dir: &tempfile::TempDir) -> Vec<String> {
    let other = open(&dir.path().join("main.db"), Duration::from_millis(200));
    let rows = other.query_once("SELECT id FROM items ORDER BY id", &[]).await;
    let rows = rows.unwrap_or_else(|e| panic!("another connection cannot read: {e}"));
    rows.iter().map(|r| r.get_str("id").unwrap_or_default().to_owned()).collect()
}

#[tokio::test]
async fn waiting_transactions_join_the_open_group_and_a_rollback_undoes_only_its_own_work() {
    let (dir, store) = fresh().await;
    let mut a = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    insert(a.as_mut(), "a").await;
    let a_returned = Arc::new(AtomicBool::new(false));
    let (rolled_back, joined) = {
        let (store, a_returned) = (Arc::clone(&store), Arc::clone(&a_returned));
        let b = tokio::spawn({
            let store = Arc::clone(&store);
            async move {
                let mut b = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
                insert(b.as_mut(), "b").await;
                b.rollback().await.unwrap_or_else(|e| panic!("{e}"));
            }
        });
        let c = tokio::spawn(async move {
            let mut c = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
            let saw_a_before_its_commit_returned =
                count(c.as_mut(), "a").await == 1 && !a_returned.load(Ordering::SeqCst);
            insert(c.as_mut(), "c").await;
            c.commit().await.unwrap_or_else(|e| panic!("{e}"));
            saw_a_before_its_commit_returned
        });
        (b, c)
    };
    // Both wait for the connection A holds before A commits.
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.commit().await.unwrap_or_else(|e| panic!("{e}"));
    a_returned.store(true, Ordering::SeqCst);
    rolled_back.await.unwrap_or_else(|e| panic!("{e}"));
    let joined = joined.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(joined, "C did not run in A's group (A's commit had returned before C read its row)");
    assert_eq!(committed(&dir).await, ["a", "c"], "B rolled back, A and C committed");
}

#[tokio::test]
async fn a_commit_whose_caller_stopped_waiting_is_still_made_and_frees_the_write_lock() {
    let (dir, store) = fresh().await;
    let mut a = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    insert(a.as_mut(), "a").await;
    let slow = tokio::spawn({
        let store = Arc::clone(&store);
        async move {
            let mut b = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
            insert(b.as_mut(), "b").await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            b.commit().await.unwrap_or_else(|e| panic!("{e}"));
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A's caller gives up while B holds the connection: A's work was released into the group.
    let gave_up = tokio::time::timeout(Duration::from_millis(20), a.commit()).await;
    assert!(gave_up.is_err(), "A's commit returned while B held the connection: {gave_up:?}");
    slow.await.unwrap_or_else(|e| panic!("{e}"));
    // Nobody touches the store again: the group must have been committed without a caller.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(committed(&dir).await, ["a", "b"]);
    let other = open(&dir.path().join("main.db"), Duration::from_millis(200));
    let write = other.execute_once("INSERT INTO items (id) VALUES ('other')", &[]).await;
    assert!(write.is_ok(), "another connection could not write (lock left held): {write:?}");
}

#[tokio::test]
async fn many_concurrent_commits_all_land_and_each_returns_after_its_data_is_committed() {
    let (dir, store) = fresh().await;
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let (store, dir) = (Arc::clone(&store), dir.path().join("main.db"));
            tokio::spawn(async move {
                let id = format!("t{i:02}");
                let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
                insert(tx.as_mut(), &id).await;
                tokio::task::yield_now().await;
                tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
                // Visible to another connection the moment commit returns.
                let other = open(&dir, Duration::from_millis(500));
                let sql = "SELECT count(*) AS n FROM items WHERE id = $1";
                let rows = other.query_once(sql, &[id.as_str().into()]).await;
                let n = rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default();
                assert_eq!(n, 1, "{id}'s commit returned before its row was committed");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(committed(&dir).await.len(), 64);
}

#[tokio::test]
async fn a_statement_outside_a_transaction_commits_the_open_group_first() {
    let (dir, store) = fresh().await;
    let mut a = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    insert(a.as_mut(), "a").await;
    let reader = tokio::spawn({
        let store = Arc::clone(&store);
        async move {
            let rows = store.query_once("SELECT count(*) AS n FROM items", &[]).await;
            rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default()
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.commit().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reader.await.unwrap_or_else(|e| panic!("{e}")), 1);
    assert_eq!(committed(&dir).await, ["a"]);
}

#[tokio::test]
async fn an_advisory_write_joins_the_open_group_instead_of_committing_it() {
    let (dir, store) = fresh().await;
    let mut a = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    insert(a.as_mut(), "a").await;
    let advisory = tokio::spawn({
        let (store, path) = (Arc::clone(&store), dir.path().join("main.db"));
        async move {
            let mark = "INSERT INTO items (id) VALUES ($1)";
            let wrote = store.execute_advisory(mark, &[SqlValue::from("mark")]).await;
            assert_eq!(wrote.unwrap_or_else(|e| panic!("{e}")), 1);
            // Right after it returns, before A takes the connection back: nothing is committed
            // yet, so the mark did not commit A's group, it joined it.
            let other = open(&path, Duration::from_millis(500));
            let rows = other.query_once("SELECT count(*) AS n FROM items", &[]).await;
            rows.unwrap_or_else(|e| panic!("{e}"))[0].get_i64("n").unwrap_or_default()
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let seen = advisory.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen, 0, "the advisory write committed the group it should have joined");
    assert_eq!(committed(&dir).await, ["a", "mark"], "the mark landed with the group's commit");
}
