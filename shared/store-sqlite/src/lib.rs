//! `jadpo-store-sqlite`: the store contract on an embedded SQLite file, for local runs and tests.
//!
//! One [`SqliteStore`] owns one `rusqlite` connection (SQLite is bundled, so no system library is
//! needed). Every transaction holds that connection for its whole life, so there is exactly one
//! writer per process, and `BEGIN IMMEDIATE` takes SQLite's write lock up front so that a second
//! process (say, `jadpo` while the local runner is up) waits out the busy timeout instead of
//! failing half-way through.
//!
//! # What it does differently from PostgreSQL
//!
//! * **One writer, no parallel readers.** Transactions are serialized per process; `FOR UPDATE
//!   SKIP LOCKED` has no equivalent and is never needed, since nobody else writes at the same time.
//! * **Statements run on the async task.** SQLite calls are short and local, so they run inline
//!   while the transaction holds the connection rather than on a blocking thread pool.
//! * **Types are looser.** JSON is stored as text, timestamps as Unix epoch milliseconds
//!   (`INTEGER`), booleans as 0/1; [`jadpo_core::Row`]'s typed getters read either form.
//!   A non-integer `PRIMARY KEY` column accepts `NULL` unless declared `NOT NULL` (an SQLite
//!   quirk the spec's schema inherits).
//! * **Durability.** File databases use WAL with `synchronous=FULL`: a committed transaction
//!   survives a crash or power loss. `:memory:` databases vanish with the process.
//! * **Group commit.** Transactions that wait for the connection while another commits share
//!   its synced `COMMIT` (each a savepoint in one outer transaction; see `group`): one `fsync`
//!   for all of them, and each `commit` still returns only after it.
//! * **Migrations lock per process.** Two processes migrating one file at once are serialized
//!   by `BEGIN IMMEDIATE` per migration, and each re-checks the ledger inside its transaction.
//! * **Parameters** are written `$1`, `$2`, ... as on PostgreSQL and rewritten to `?1`, `?2`.

mod audit;
mod breaker;
mod delivery_admin;
mod error;
mod file_counts;
pub mod files;
mod flags;
mod group;
mod housekeeping;
mod keyed_state;
mod lease;
pub mod migrate;
mod passkeys;
mod pipeline;
mod schedule;
mod schema;
mod service_keys;
mod sign_in;
mod steps;
mod tx;
mod user_sessions;
mod webhooks;
mod workflow;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jadpo_core::TransactionalStore;
use jadpo_core::{Clock, Dialect, Row, SqlValue, StoreError, Transaction};
use jadpo_store_sql::{SqlDialect, SqlStore};
use rusqlite::{Connection, OpenFlags};

pub use tx::SqliteTx;

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqliteLocation {
    /// A file (created with its parent folders if missing).
    File(PathBuf),
    /// A private in-memory database, gone when the store is dropped.
    Memory,
}

/// Options for opening a store.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How long a statement waits for another process's write lock before failing (default 5 s).
    pub busy_timeout: Duration,
    /// Whether opening a file that does not exist creates it (and its directory). Default yes;
    /// a verb that only reads or changes an existing database opens without, so a mistyped path
    /// is an error rather than a new empty file.
    pub create: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { busy_timeout: Duration::from_secs(5), create: true }
    }
}

/// Every store role on SQLite: the shared roles over this adapter's connection.
pub type SqliteStore = SqlStore<Sqlite>;

/// This adapter's statements for every role.
pub static DIALECT: SqlDialect = SqlDialect {
    pipeline: &pipeline::SQL,
    delivery_admin: &delivery_admin::ADMIN,
    service_keys: &service_keys::SERVICE_KEYS,
    user_sessions: &user_sessions::USER_SESSIONS,
    sign_in: &sign_in::SIGN_IN,
    passkeys: &passkeys::PASSKEYS,
    steps: &steps::STEPS,
    leases: lease::leases,
    keyed_state: &keyed_state::KEYED_STATE,
    webhooks: &webhooks::WEBHOOKS,
    schedule: &schedule::SCHEDULES,
    housekeeping: &housekeeping::HOUSEKEEPING,
    breaker: &breaker::BREAKERS,
    flags: &flags::FLAGS,
    audit: &audit::AUDIT,
    audit_generated: audit::GENERATED,
    files: &file_counts::FILES,
    files_generated: file_counts::GENERATED,
    workflow: &workflow::SQL,
    execution: workflow::EXECUTION,
};

/// The store contract on one SQLite database.
pub struct Sqlite {
    name: String,
    conn: group::Shared,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Sqlite {
    /// Opens (creating if needed) the database for the store called `name`.
    pub fn open(
        name: &str,
        location: &SqliteLocation,
        options: &SqliteOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<SqliteStore, StoreError> {
        let conn = match location {
            SqliteLocation::Memory => Connection::open_in_memory(),
            SqliteLocation::File(path) if !options.create => {
                if !path.is_file() {
                    return Err(StoreError::new(
                        jadpo_core::StoreErrorKind::NotFound,
                        format!(
                            "{} does not exist: check the path (this command creates no \
                             database; `jadpo migrate apply` makes and migrates one)",
                            path.display()
                        ),
                    ));
                }
                Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            }
            SqliteLocation::File(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        StoreError::unavailable(format!("cannot create {}: {e}", parent.display()))
                    })?;
                }
                Connection::open(path)
            }
        }
        .map_err(error::translate)?;
        configure(&conn, location, options).map_err(error::translate)?;
        let connection = Self { name: name.to_owned(), conn: group::Conn::new(conn), clock };
        Ok(SqlStore::new(connection, &DIALECT))
    }
}

fn configure(
    conn: &Connection,
    location: &SqliteLocation,
    options: &SqliteOptions,
) -> rusqlite::Result<()> {
    conn.busy_timeout(options.busy_timeout)?;
    if matches!(location, SqliteLocation::File(_)) {
        // journal_mode returns a row, so it is read rather than executed.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "the database refused WAL journaling (mode is {mode})"
            )));
        }
    }
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
}

#[async_trait]
impl TransactionalStore for Sqlite {
    fn name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError> {
        Ok(Box::new(SqliteTx::begin(&self.conn).await?))
    }

    async fn query_once(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        tx::query(&*group::idle(&self.conn).await, sql, params)
    }

    async fn execute_once(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        tx::execute(&*group::idle(&self.conn).await, sql, params)
    }

    /// Commits without syncing the WAL (`synchronous=NORMAL` for this statement only): the next
    /// synced commit's sync covers it; a crash before then may lose it, never corrupts the file.
    /// With a group open (transactions waiting for its `COMMIT`), the write joins it instead and
    /// returns at once: the group's sync covers it.
    async fn execute_advisory(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        let mut conn = self.conn.lock().await;
        if conn.group_open() {
            return tx::execute(&conn, sql, params);
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(error::translate)?;
        let changed = tx::execute(&conn, sql, params);
        conn.execute_batch("PRAGMA synchronous = FULL").map_err(error::translate)?;
        changed
    }
}
