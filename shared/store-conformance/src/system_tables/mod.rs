//! The `jadpo_*` tables' physical shapes as this release's migrations make them, per dialect:
//! what [`crate::shape_cases`] compares each store with. Types and defaults are written as the
//! database prints them (defaults without casts, lower case); indexes are `(columns, unique)`,
//! leaving out the primary key's own. Change an entry only together with the migration that
//! changes the table.

use jadpo_core::Dialect;

mod postgres;
mod sqlite;

/// One column: name, type as printed, NOT NULL, default as printed (normalized).
pub type Column = (&'static str, &'static str, bool, Option<&'static str>);

/// One system table's shape.
#[derive(Debug)]
pub struct SystemTable {
    /// The table.
    pub name: &'static str,
    /// Its columns, in physical order.
    pub columns: &'static [Column],
    /// Its primary key, in key order.
    pub primary_key: &'static [&'static str],
    /// `(columns, referenced table, referenced columns, ON DELETE)`, columns comma-joined.
    pub foreign_keys: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// `(columns, unique)` of each index besides the primary key's.
    pub indexes: &'static [(&'static [&'static str], bool)],
}

/// The `jadpo_*` tables of `dialect`.
pub fn system_tables(dialect: Dialect) -> &'static [SystemTable] {
    match dialect {
        Dialect::Postgres => postgres::POSTGRES,
        Dialect::Sqlite => sqlite::SQLITE,
    }
}
