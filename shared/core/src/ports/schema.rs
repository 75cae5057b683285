//! The introspection role: what tables, columns, keys and indexes a store really has, for the
//! conformance suite and `jadpo migrate status`.

use async_trait::async_trait;

use crate::error::StoreError;
use jadpo_schema::table::TableSchema;

/// The role that describes a store's schema.
#[async_trait]
pub trait SchemaIntrospection: Send + Sync {
    /// Names of the store's tables (in the default schema), sorted.
    async fn schema_tables(&self) -> Result<Vec<String>, StoreError>;

    /// The shape of `table`, or `None` when there is no such table.
    async fn schema_table(&self, table: &str) -> Result<Option<TableSchema>, StoreError>;

    /// Whether `table` (one [`schema_tables`](Self::schema_tables) names) holds no row.
    async fn schema_table_is_empty(&self, table: &str) -> Result<bool, StoreError>;
}
