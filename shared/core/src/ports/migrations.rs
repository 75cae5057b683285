//! The migration role: a locked migration session per store (each migration in its own
//! transaction, recorded in its ledger with its checksum), and the ledgers as they stand.

use async_trait::async_trait;

use crate::error::StoreError;
use jadpo_schema::migrate::AppliedMigration;
use jadpo_schema::migrate::Migration;
use jadpo_schema::migrate::MigrationCatalog;
use jadpo_schema::migrate::Step;
use jadpo_schema::migrate::Unplaced;

/// A locked migration run on one store, implemented by each adapter.
#[async_trait]
pub trait MigrationSession: Send {
    /// What the ledgers record (read under the session's lock).
    async fn applied(&mut self) -> Result<Vec<AppliedMigration>, StoreError>;

    /// Runs a step's SQL and records it in its ledger (its checksum and the features it ran for
    /// in `jadpo_migrations`) in one transaction. Returns `false`, changing nothing, if the
    /// ledger changed meanwhile: the version was recorded, or (a further run) its features no
    /// longer read as the step's `extends`.
    async fn apply(&mut self, step: &Step<'_>) -> Result<bool, StoreError>;

    /// Drops what `unplaced` lists and narrows every jadpo migration's recorded features, in one
    /// transaction.
    async fn drop_unplaced(&mut self, unplaced: &Unplaced) -> Result<(), StoreError>;

    /// Records the checksum of a workflow version the spec's ledger already has.
    async fn adopt(&mut self, migration: &Migration) -> Result<(), StoreError>;

    /// Releases the session's lock.
    async fn finish(self: Box<Self>) -> Result<(), StoreError>;
}

/// The role that applies and lists migrations.
#[async_trait]
pub trait MigrationStore: Send + Sync {
    /// The adapter's built-in catalog (workflow store and Jadpo system tables).
    fn migration_catalog(&self) -> MigrationCatalog;

    /// Takes the store's migration lock (others wait) and creates the ledgers if missing.
    async fn migration_session(&self) -> Result<Box<dyn MigrationSession>, StoreError>;

    /// What the ledgers record, without locking or creating anything (empty when they are absent).
    async fn migrations_applied(&self) -> Result<Vec<AppliedMigration>, StoreError>;
}
