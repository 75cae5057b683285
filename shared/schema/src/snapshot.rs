//! A store's schema as its migrations make it, written to a file kept beside the migrations and
//! reviewed in diffs like code, and what differs between two schemas.
//!
//! `jadpo snapshot` writes one per store and dialect; `jadpo check` builds the schema again from
//! the migrations and compares it with the file (a migration whose result changed), and compares
//! a live database with the file (a column added, dropped, retyped or renamed by hand, an index
//! missing). The system tables are in the snapshot like the application's; the two migration
//! ledgers are not: they are the runtime's bookkeeping of what was applied, not schema a
//! migration makes.
//!
//! A snapshot is JSON with its tables sorted by name, so the same migrations always give the same
//! bytes and a change shows as a few lines of diff.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::migrate::{MigrationCatalog, items, split};
use crate::table::TableSchema;

/// The format name every snapshot file carries.
pub const FORMAT: &str = "jadpo.snapshot";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The ledgers, in no snapshot.
pub const LEDGER_TABLES: [&str; 2] = ["jadpo_migrations", "invariant_schema_migrations"];

/// Why a snapshot file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Not JSON of the snapshot's shape.
    #[error("{origin} is not a schema snapshot: {reason}")]
    Malformed { origin: String, reason: String },
    /// Another format or a version this build does not read.
    #[error(
        "{origin} is format {format:?} version {version}; this build reads {FORMAT:?} version \
         {VERSION}"
    )]
    Unsupported { origin: String, format: String, version: u32 },
}

/// One store's schema on one dialect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub format: String,
    pub version: u32,
    /// The store, as declared.
    pub store: String,
    /// `postgres` or `sqlite`.
    pub dialect: String,
    /// The last version of each ledger the migrations reached (`jadpo`, `workflow`).
    pub migrations: BTreeMap<String, u32>,
    /// Every table but the ledgers, by name.
    pub tables: Vec<TableSchema>,
}

impl Snapshot {
    /// The snapshot of `tables`, leaving out the ledgers and sorting by name.
    pub fn new(
        store: &str,
        dialect: &str,
        migrations: BTreeMap<String, u32>,
        tables: Vec<TableSchema>,
    ) -> Self {
        let mut tables: Vec<TableSchema> =
            tables.into_iter().filter(|t| !LEDGER_TABLES.contains(&t.name.as_str())).collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            format: FORMAT.to_owned(),
            version: VERSION,
            store: store.to_owned(),
            dialect: dialect.to_owned(),
            migrations,
            tables,
        }
    }

    /// The file's text: JSON with each column, key and index on a line of its own, so that a
    /// change to one shows as one line of diff; ending in a newline.
    pub fn to_text(&self) -> String {
        let mut out = String::from("{\n");
        out.push_str(&format!("  \"format\": {},\n", line(&self.format)));
        out.push_str(&format!("  \"version\": {},\n", self.version));
        out.push_str(&format!("  \"store\": {},\n", line(&self.store)));
        out.push_str(&format!("  \"dialect\": {},\n", line(&self.dialect)));
        out.push_str(&format!("  \"migrations\": {},\n", line(&self.migrations)));
        out.push_str("  \"tables\": [");
        for (i, t) in self.tables.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&format!("    {{\n      \"name\": {},\n", line(&t.name)));
            out.push_str(&format!("      \"columns\": {},\n", lines(&t.columns)));
            out.push_str(&format!("      \"primary_key\": {},\n", line(&t.primary_key)));
            out.push_str(&format!("      \"foreign_keys\": {},\n", lines(&t.foreign_keys)));
            out.push_str(&format!("      \"indexes\": {}\n    }}", lines(&t.indexes)));
        }
        out.push_str(if self.tables.is_empty() { "]\n}\n" } else { "\n  ]\n}\n" });
        out
    }

    /// Reads a snapshot file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, SnapshotError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            SnapshotError::Malformed { origin: origin.to_owned(), reason: e.to_string() }
        })?;
        let format = value.get("format").and_then(|f| f.as_str()).unwrap_or_default();
        let version = value.get("version").and_then(serde_json::Value::as_u64).unwrap_or(0);
        if format != FORMAT || version != u64::from(VERSION) {
            return Err(SnapshotError::Unsupported {
                origin: origin.to_owned(),
                format: format.to_owned(),
                version: u32::try_from(version).unwrap_or(u32::MAX),
            });
        }
        serde_json::from_value(value).map_err(|e| SnapshotError::Malformed {
            origin: origin.to_owned(),
            reason: e.to_string(),
        })
    }

    /// The table called `name`, if any.
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The path of this store's snapshot under the snapshots folder: `<dialect>/<store>.json`.
    pub fn relative_path(dialect: &str, store: &str) -> String {
        format!("{dialect}/{store}.json")
    }
}

/// A list with each item on a line of its own (an empty one on the same line).
fn lines<T: Serialize>(items: &[T]) -> String {
    if items.is_empty() {
        return "[]".to_owned();
    }
    let each: Vec<String> = items.iter().map(|i| format!("        {}", line(i))).collect();
    format!("[\n{}\n      ]", each.join(",\n"))
}

/// One value as one line of JSON.
fn line<T: Serialize + ?Sized>(value: &T) -> String {
    // reason: strings, numbers, maps and lists of them: serializing them cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// One way a schema differs from the one expected of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// An expected table is not there.
    TableMissing { table: String },
    /// A table is there that is not expected.
    TableAdded { table: String },
    /// A column is there that is not expected.
    ColumnAdded { table: String, column: String, data_type: String },
    /// An expected column is not there.
    ColumnDropped { table: String, column: String },
    /// An expected column is not there and one of the same type is in its place.
    ColumnRenamed { table: String, from: String, to: String },
    /// A column has another type.
    ColumnRetyped { table: String, column: String, expected: String, found: String },
    /// A column's `NOT NULL` differs.
    ColumnNullability { table: String, column: String, expected_not_null: bool },
    /// A column's default differs.
    ColumnDefault { table: String, column: String, expected: Option<String>, found: Option<String> },
    /// The primary key has other columns.
    PrimaryKey { table: String, expected: Vec<String>, found: Vec<String> },
    /// An expected index is not there.
    IndexMissing { table: String, index: String },
    /// An index is there that is not expected.
    IndexAdded { table: String, index: String },
    /// An index covers other columns or differs in uniqueness.
    IndexChanged { table: String, index: String },
    /// An expected foreign key is not there.
    ForeignKeyMissing { table: String, columns: Vec<String>, references: String },
    /// A foreign key is there that is not expected.
    ForeignKeyAdded { table: String, columns: Vec<String>, references: String },
}

impl Drift {
    /// Its short code (`column_added`), the last part of a finding's code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TableMissing { .. } => "table_missing",
            Self::TableAdded { .. } => "table_added",
            Self::ColumnAdded { .. } => "column_added",
            Self::ColumnDropped { .. } => "column_dropped",
            Self::ColumnRenamed { .. } => "column_renamed",
            Self::ColumnRetyped { .. } => "column_retyped",
            Self::ColumnNullability { .. } => "column_nullability",
            Self::ColumnDefault { .. } => "column_default",
            Self::PrimaryKey { .. } => "primary_key",
            Self::IndexMissing { .. } => "index_missing",
            Self::IndexAdded { .. } => "index_added",
            Self::IndexChanged { .. } => "index_changed",
            Self::ForeignKeyMissing { .. } => "foreign_key_missing",
            Self::ForeignKeyAdded { .. } => "foreign_key_added",
        }
    }

    /// The table it is in.
    pub fn table(&self) -> &str {
        match self {
            Self::TableMissing { table }
            | Self::TableAdded { table }
            | Self::ColumnAdded { table, .. }
            | Self::ColumnDropped { table, .. }
            | Self::ColumnRenamed { table, .. }
            | Self::ColumnRetyped { table, .. }
            | Self::ColumnNullability { table, .. }
            | Self::ColumnDefault { table, .. }
            | Self::PrimaryKey { table, .. }
            | Self::IndexMissing { table, .. }
            | Self::IndexAdded { table, .. }
            | Self::IndexChanged { table, .. }
            | Self::ForeignKeyMissing { table, .. }
            | Self::ForeignKeyAdded { table, .. } => table,
        }
    }

    /// What is missing, when the drift is something expected that is not there: the table
    /// (`jadpo_outbox`), its column (`jadpo_outbox.encoding`) or its index
    /// (`jadpo_outbox:jadpo_outbox_created_at_idx`), the keys of [`Provenance`].
    pub fn missing_item(&self) -> Option<String> {
        match self {
            Self::TableMissing { table } => Some(table.clone()),
            Self::ColumnDropped { table, column } => Some(format!("{table}.{column}")),
            Self::IndexMissing { table, index } => Some(format!("{table}:{index}")),
            _ => None,
        }
    }
}

impl fmt::Display for Drift {
    /// One sentence, "expected" being the snapshot and "found" what was examined.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TableMissing { table } => write!(f, "table {table} is missing"),
            Self::TableAdded { table } => write!(f, "table {table} is not in the snapshot"),
            Self::ColumnAdded { table, column, data_type } => {
                write!(f, "column {table}.{column} ({data_type}) is not in the snapshot")
            }
            Self::ColumnDropped { table, column } => {
                write!(f, "column {table}.{column} is missing")
            }
            Self::ColumnRenamed { table, from, to } => {
                write!(
                    f,
                    "column {table}.{from} is missing and {table}.{to} of its type is in its place (renamed?)"
                )
            }
            Self::ColumnRetyped { table, column, expected, found } => {
                write!(f, "column {table}.{column} is {found}, the snapshot has {expected}")
            }
            Self::ColumnNullability { table, column, expected_not_null } => {
                let (want, got) = if *expected_not_null {
                    ("NOT NULL", "nullable")
                } else {
                    ("nullable", "NOT NULL")
                };
                write!(f, "column {table}.{column} is {got}, the snapshot has it {want}")
            }
            Self::ColumnDefault { table, column, expected, found } => write!(
                f,
                "column {table}.{column} defaults to {}, the snapshot to {}",
                found.as_deref().unwrap_or("nothing"),
                expected.as_deref().unwrap_or("nothing")
            ),
            Self::PrimaryKey { table, expected, found } => write!(
                f,
                "table {table}'s primary key is ({}), the snapshot's ({})",
                found.join(", "),
                expected.join(", ")
            ),
            Self::IndexMissing { table, index } => write!(f, "index {index} on {table} is missing"),
            Self::IndexAdded { table, index } => {
                write!(f, "index {index} on {table} is not in the snapshot")
            }
            Self::IndexChanged { table, index } => {
                write!(f, "index {index} on {table} covers other columns or differs in uniqueness")
            }
            Self::ForeignKeyMissing { table, columns, references } => {
                write!(f, "foreign key {table}({}) → {references} is missing", columns.join(", "))
            }
            Self::ForeignKeyAdded { table, columns, references } => write!(
                f,
                "foreign key {table}({}) → {references} is not in the snapshot",
                columns.join(", ")
            ),
        }
    }
}

/// Which migration first made each table, column and index, keyed as [`Drift::missing_item`]
/// gives them: `(ledger, version, name)`.
pub type Provenance = BTreeMap<String, (String, u32, String)>;

/// Reads from each migration's statements, in order, what it made first.
pub fn provenance(catalog: &MigrationCatalog) -> Provenance {
    let mut out = Provenance::new();
    for m in catalog.all() {
        let id = (m.ledger.name().to_owned(), m.version, m.name.clone());
        for item in split(&m.sql).into_iter().flat_map(items) {
            out.entry(item).or_insert_with(|| id.clone());
        }
    }
    out
}

/// The migration that made `item`; for an index the database made with its table (a primary
/// key's, a unique constraint's), the table's.
pub fn made_by<'a>(provenance: &'a Provenance, item: &str) -> Option<&'a (String, u32, String)> {
    let table = item.split([':', '.']).next().unwrap_or(item);
    provenance.get(item).or_else(|| provenance.get(table))
}

/// How `found` differs from `expected`, table by table, in a stable order.
pub fn diff(expected: &[TableSchema], found: &[TableSchema]) -> Vec<Drift> {
    let by_name = |list: &[TableSchema]| {
        list.iter().map(|t| (t.name.clone(), t.clone())).collect::<BTreeMap<_, _>>()
    };
    let (want, got) = (by_name(expected), by_name(found));
    let mut drifts = Vec::new();
    for (name, table) in &want {
        match got.get(name) {
            None => drifts.push(Drift::TableMissing { table: name.clone() }),
            Some(other) => drifts.extend(diff_table(table, other)),
        }
    }
    for name in got.keys().filter(|n| !want.contains_key(*n)) {
        drifts.push(Drift::TableAdded { table: name.clone() });
    }
    drifts
}

fn diff_table(want: &TableSchema, got: &TableSchema) -> Vec<Drift> {
    let table = want.name.clone();
    let mut drifts = diff_columns(want, got);
    if want.primary_key != got.primary_key {
        drifts.push(Drift::PrimaryKey {
            table: table.clone(),
            expected: want.primary_key.clone(),
            found: got.primary_key.clone(),
        });
    }
    for index in &want.indexes {
        match got.index(&index.name) {
            None => {
                drifts.push(Drift::IndexMissing { table: table.clone(), index: index.name.clone() })
            }
            Some(other) if other != index => {
                drifts.push(Drift::IndexChanged { table: table.clone(), index: index.name.clone() })
            }
            Some(_) => {}
        }
    }
    for index in got.indexes.iter().filter(|i| want.index(&i.name).is_none()) {
        drifts.push(Drift::IndexAdded { table: table.clone(), index: index.name.clone() });
    }
    for fk in want.foreign_keys.iter().filter(|k| !got.foreign_keys.contains(k)) {
        drifts.push(Drift::ForeignKeyMissing {
            table: table.clone(),
            columns: fk.columns.clone(),
            references: fk.references_table.clone(),
        });
    }
    for fk in got.foreign_keys.iter().filter(|k| !want.foreign_keys.contains(k)) {
        drifts.push(Drift::ForeignKeyAdded {
            table: table.clone(),
            columns: fk.columns.clone(),
            references: fk.references_table.clone(),
        });
    }
    drifts
}

/// Columns: those of both compared field by field; a missing one and an unexpected one of the
/// same type and nullability, when each is the only such, read as a rename.
fn diff_columns(want: &TableSchema, got: &TableSchema) -> Vec<Drift> {
    let table = want.name.clone();
    let mut drifts = Vec::new();
    let mut dropped: Vec<_> =
        want.columns.iter().filter(|c| got.column(&c.name).is_none()).collect();
    let mut added: Vec<_> = got.columns.iter().filter(|c| want.column(&c.name).is_none()).collect();
    let same_shape = |a: &&crate::table::ColumnInfo, b: &&crate::table::ColumnInfo| {
        a.data_type == b.data_type && a.not_null == b.not_null
    };
    let renamed: Vec<(String, String)> = dropped
        .iter()
        .filter_map(|d| {
            let candidates: Vec<_> = added.iter().filter(|a| same_shape(d, a)).collect();
            let back =
                dropped.iter().filter(|o| candidates.first().is_some_and(|a| same_shape(o, a)));
            (candidates.len() == 1 && back.count() == 1)
                .then(|| (d.name.clone(), candidates[0].name.clone()))
        })
        .collect();
    dropped.retain(|d| !renamed.iter().any(|(from, _)| *from == d.name));
    added.retain(|a| !renamed.iter().any(|(_, to)| *to == a.name));
    for (from, to) in renamed {
        drifts.push(Drift::ColumnRenamed { table: table.clone(), from, to });
    }
    for c in dropped {
        drifts.push(Drift::ColumnDropped { table: table.clone(), column: c.name.clone() });
    }
    for c in added {
        drifts.push(Drift::ColumnAdded {
            table: table.clone(),
            column: c.name.clone(),
            data_type: c.data_type.clone(),
        });
    }
    for c in &want.columns {
        let Some(other) = got.column(&c.name) else { continue };
        let column = c.name.clone();
        if other.data_type != c.data_type {
            drifts.push(Drift::ColumnRetyped {
                table: table.clone(),
                column,
                expected: c.data_type.clone(),
                found: other.data_type.clone(),
            });
        } else if other.not_null != c.not_null {
            drifts.push(Drift::ColumnNullability {
                table: table.clone(),
                column,
                expected_not_null: c.not_null,
            });
        } else if other.default != c.default {
            drifts.push(Drift::ColumnDefault {
                table: table.clone(),
                column,
                expected: c.default.clone(),
                found: other.default.clone(),
            });
        }
    }
    drifts
}

#[cfg(test)]
mod tests;
