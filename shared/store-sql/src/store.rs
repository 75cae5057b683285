//! [`SqlStore`]: an adapter's connection and its statements, made a whole [`jadpo_core::Store`].
//! The roles are implemented in their own modules; this one forwards the three an adapter
//! writes itself (transactions, migrations, introspection) to its connection.

use async_trait::async_trait;
use jadpo_core::ports::{MigrationSession, MigrationStore, SchemaIntrospection};
use jadpo_core::{Dialect, Row, SqlValue, StoreError, Transaction, TransactionalStore};
use jadpo_schema::migrate::{AppliedMigration, MigrationCatalog};
use jadpo_schema::table::TableSchema;

use crate::dialect::SqlDialect;

/// Every store role over the connection `C`, speaking `sql`.
#[derive(Clone)]
pub struct SqlStore<C> {
    connection: C,
    pub(crate) sql: &'static SqlDialect,
    /// Deliveries' "sent" marks, written together when made at once.
    pub(crate) marks: std::sync::Arc<crate::marks::MarkBatches>,
}

impl<C: std::fmt::Debug> std::fmt::Debug for SqlStore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.connection.fmt(f)
    }
}

impl<C> SqlStore<C> {
    /// The store over `connection`, speaking `sql` (the adapter's own dialect).
    pub fn new(connection: C, sql: &'static SqlDialect) -> Self {
        Self { connection, sql, marks: std::sync::Arc::default() }
    }

    /// The adapter's connection.
    pub const fn connection(&self) -> &C {
        &self.connection
    }

    /// The statements this store speaks.
    pub const fn dialect_sql(&self) -> &'static SqlDialect {
        self.sql
    }
}

#[async_trait]
impl<C: TransactionalStore> TransactionalStore for SqlStore<C> {
    fn name(&self) -> &str {
        self.connection.name()
    }

    fn dialect(&self) -> Dialect {
        self.connection.dialect()
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError> {
        self.connection.begin().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.connection.ping().await
    }

    async fn query_once(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        self.connection.query_once(sql, params).await
    }

    async fn execute_once(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        self.connection.execute_once(sql, params).await
    }

    async fn execute_advisory(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        self.connection.execute_advisory(sql, params).await
    }
}

#[async_trait]
impl<C: MigrationStore> MigrationStore for SqlStore<C> {
    fn migration_catalog(&self) -> MigrationCatalog {
        self.connection.migration_catalog()
    }

    async fn migration_session(&self) -> Result<Box<dyn MigrationSession>, StoreError> {
        self.connection.migration_session().await
    }

    async fn migrations_applied(&self) -> Result<Vec<AppliedMigration>, StoreError> {
        self.connection.migrations_applied().await
    }
}

#[async_trait]
impl<C: SchemaIntrospection> SchemaIntrospection for SqlStore<C> {
    async fn schema_tables(&self) -> Result<Vec<String>, StoreError> {
        self.connection.schema_tables().await
    }

    async fn schema_table(&self, table: &str) -> Result<Option<TableSchema>, StoreError> {
        self.connection.schema_table(table).await
    }

    async fn schema_table_is_empty(&self, table: &str) -> Result<bool, StoreError> {
        self.connection.schema_table_is_empty(table).await
    }
}
