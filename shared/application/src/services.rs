//! The application's service entity: the table holding the services (other systems) that call
//! it with service keys. Keys live in the same store, and a key is read together with its
//! service's record in one statement, so deleting a service's row stops all its keys at once and
//! a key is issued only for a service the table holds.

use jadpo_core::model::principal::EntityRecord;

/// The application's services: an entity (table) with an id column, a service's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEntity {
    /// The entity's name (`service`).
    pub entity: String,
    /// The store its table is in; `jadpo_service_keys` is there too.
    pub store: String,
    pub table: String,
    /// The column holding the service's name (a service principal's id).
    pub id_column: String,
}

impl ServiceEntity {
    /// Services in `table` of `store`, named by its `id` column.
    pub fn new(entity: &str, store: &str, table: &str) -> Self {
        Self {
            entity: entity.to_owned(),
            store: store.to_owned(),
            table: table.to_owned(),
            id_column: "id".to_owned(),
        }
    }

    /// The identifiers interpolated into the key statements.
    pub fn identifiers(&self) -> [&str; 3] {
        [&self.entity, &self.table, &self.id_column]
    }

    /// `($1 id)`: adds the service unless the table holds it (its other columns take their
    /// defaults).
    pub fn insert_if_missing_sql(&self) -> String {
        format!(
            "INSERT INTO {} ({}) VALUES ($1) ON CONFLICT DO NOTHING",
            self.table, self.id_column
        )
    }

    /// Where its records are, for reading a key with its service's record.
    pub fn record(&self) -> EntityRecord<'_> {
        EntityRecord { table: &self.table, id_column: &self.id_column }
    }
}
