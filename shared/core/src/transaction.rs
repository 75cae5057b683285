//! The transaction seam: [`Transaction`], the handle an action's own SQL and the runtime's rows
//! share, so they commit together or not at all; [`TransactionalStore`], the role that opens one
//! (and runs single statements on their own); and [`commit_or_rollback`].
//!
//! Everything above the seam (roles, use cases, the application's handlers) speaks through it;
//! the adapters implement it over their driver.

use std::any::Any;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::sql::{Dialect, Row, SqlValue};

/// An open database transaction.
///
/// Statements take `$1`-style parameters in both dialects. A transaction that is dropped without
/// [`commit`](Transaction::commit) is rolled back. Dialect-specific work that the portable calls do
/// not cover goes through [`driver`](Transaction::driver), which the adapters document (for
/// example `jadpo_store_postgres::PgDriverTx`).
#[async_trait]
pub trait Transaction: Send {
    /// The dialect of the statements this transaction accepts.
    fn dialect(&self) -> Dialect;

    /// Runs one statement and returns the number of rows it changed.
    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError>;

    /// Runs one statement and returns its rows.
    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError>;

    /// Runs several `;`-separated statements without parameters (DDL, migrations).
    async fn batch(&mut self, sql: &str) -> Result<(), StoreError>;

    /// Makes every statement of the transaction durable, or none of them.
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;

    /// Discards every statement of the transaction.
    async fn rollback(self: Box<Self>) -> Result<(), StoreError>;

    /// The escape hatch: the adapter's driver-level transaction, to downcast to its documented type.
    fn driver(&mut self) -> &mut (dyn Any + Send);

    /// Runs a statement expected to return at most one row.
    async fn query_opt(
        &mut self,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<Option<Row>, StoreError> {
        let mut rows = self.query(sql, params).await?;
        match rows.len() {
            0 => Ok(None),
            1 => Ok(rows.pop()),
            n => Err(StoreError::invalid(format!("expected at most one row, got {n}"))),
        }
    }

    /// Runs a statement expected to return exactly one row.
    async fn query_one(&mut self, sql: &str, params: &[SqlValue]) -> Result<Row, StoreError> {
        self.query_opt(sql, params)
            .await?
            .ok_or_else(|| StoreError::not_found("expected one row, got none"))
    }
}

/// Where a statement runs, for the calls where the caller has the choice: inside its
/// transaction (it sees the transaction's own writes and commits or rolls back with them), or on
/// its own (one round trip, autocommit: for a read that belongs to no transaction, or one on
/// another store than the transaction's).
pub enum On<'a> {
    /// Inside this transaction.
    Tx(&'a mut dyn Transaction),
    /// On its own.
    Own,
}

/// The role that opens transactions and answers health checks.
#[async_trait]
pub trait TransactionalStore: Send + Sync {
    /// The store's name as the application declared it (`main`, `warehouse`, ...).
    fn name(&self) -> &str;

    /// The dialect this store speaks.
    fn dialect(&self) -> Dialect;

    /// Opens a transaction.
    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError>;

    /// Checks that the database answers (`SELECT 1`).
    async fn ping(&self) -> Result<(), StoreError> {
        self.query_once("SELECT 1 AS one", &[]).await.map(|_| ())
    }

    /// Runs one statement on its own, atomically, without an explicit transaction (two round
    /// trips fewer on PostgreSQL): for single reads and single-statement writes.
    async fn query_once(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        let mut tx = self.begin().await?;
        let rows = tx.query(sql, params).await?;
        tx.commit().await?;
        Ok(rows)
    }

    /// Like [`query_once`](Self::query_once), returning the number of rows changed.
    async fn execute_once(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let changed = tx.execute(sql, params).await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// Like [`execute_once`](Self::execute_once), for a write that is advice rather than a fact
    /// (a mark the relay reads, whose loss costs only a re-sent message that the handled record
    /// deduplicates): the adapter may commit it without waiting for the disk. SQLite commits it
    /// with `synchronous=NORMAL` (in WAL mode, made durable by the next synced commit);
    /// PostgreSQL's statements for such writes turn `synchronous_commit` off themselves.
    async fn execute_advisory(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        self.execute_once(sql, params).await
    }
}

/// Commits `tx` when `result` is `Ok`, else rolls it back, and returns `result`: the shape of
/// every operator verb's transaction. On failure the error that stopped the work is the one
/// reported; the rollback only ends the transaction (the adapter drops a broken connection).
pub async fn commit_or_rollback<T, E: From<StoreError>>(
    tx: Box<dyn Transaction>,
    result: Result<T, E>,
) -> Result<T, E> {
    match result {
        Ok(value) => {
            tx.commit().await?;
            Ok(value)
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}
