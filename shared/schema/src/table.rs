//! Schema introspection: what tables, columns, keys and indexes a store really has.
//!
//! The conformance suite compares this against the specification's physical column reference, and
//! operators read it through `jadpo migrate status`. Types and defaults are reported the way the
//! database prints them (`character varying(255)`, `'{}'::jsonb` on PostgreSQL; the declared type
//! and default text on SQLite); comparing them with the spec is the conformance suite's job.
//! They serialize as the tables of a migration snapshot (`crate::snapshot`).

use serde::{Deserialize, Serialize};

/// One column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnInfo {
    /// Column name.
    pub name: String,
    /// Type as the database prints it.
    #[serde(rename = "type")]
    pub data_type: String,
    /// Whether the column is `NOT NULL` (primary-key columns count as not null).
    pub not_null: bool,
    /// Default expression as the database prints it, if any.
    pub default: Option<String>,
}

/// One foreign key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKeyInfo {
    /// Referencing columns.
    pub columns: Vec<String>,
    /// Referenced table.
    pub references_table: String,
    /// Referenced columns.
    pub references_columns: Vec<String>,
    /// `ON DELETE` action, upper case (`CASCADE`, `NO ACTION`, ...).
    pub on_delete: String,
}

/// One index (including those behind primary keys and unique constraints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexInfo {
    /// Index name.
    pub name: String,
    /// Indexed columns, in order.
    pub columns: Vec<String>,
    /// Whether the index enforces uniqueness.
    pub unique: bool,
}

/// A table's physical shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSchema {
    /// Table name.
    pub name: String,
    /// Columns in physical order.
    pub columns: Vec<ColumnInfo>,
    /// Primary-key columns, in key order.
    pub primary_key: Vec<String>,
    pub foreign_keys: Vec<ForeignKeyInfo>,
    pub indexes: Vec<IndexInfo>,
}

impl TableSchema {
    /// The column called `name`, if any.
    pub fn column(&self, name: &str) -> Option<&ColumnInfo> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The index called `name`, if any.
    pub fn index(&self, name: &str) -> Option<&IndexInfo> {
        self.indexes.iter().find(|i| i.name == name)
    }
}
