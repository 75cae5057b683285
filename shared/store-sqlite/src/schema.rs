//! Schema introspection on SQLite, through the `pragma_*` table-valued functions.

use std::collections::BTreeMap;

use async_trait::async_trait;
use jadpo_core::ports::SchemaIntrospection;
use jadpo_core::{SqlValue, StoreError};
use jadpo_schema::table::{ColumnInfo, ForeignKeyInfo, IndexInfo, TableSchema};
use rusqlite::Connection;

use crate::Sqlite;
use crate::tx::query;

const TABLES: &str = "SELECT name FROM sqlite_schema
    WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name";
const COLUMNS: &str = "SELECT name, type, \"notnull\" AS not_null, dflt_value, pk FROM pragma_table_info($1) ORDER BY cid";
const FOREIGN_KEYS: &str =
    "SELECT id, \"from\" AS from_col, \"table\" AS ref_table, \"to\" AS to_col,
    on_delete FROM pragma_foreign_key_list($1) ORDER BY id, seq";
const INDEXES: &str =
    "SELECT name, \"unique\" AS is_unique FROM pragma_index_list($1) ORDER BY name";
// An index on an expression has no column name there: `(expression)`, as on PostgreSQL.
const INDEX_COLUMNS: &str =
    "SELECT COALESCE(name, '(expression)') AS name FROM pragma_index_info($1) ORDER BY seqno";

fn describe(conn: &Connection, table: &str) -> Result<Option<TableSchema>, StoreError> {
    let name = [SqlValue::from(table)];
    let column_rows = query(conn, COLUMNS, &name)?;
    if column_rows.is_empty() {
        return Ok(None);
    }
    let mut columns = Vec::new();
    let mut pk: Vec<(i64, String)> = Vec::new();
    for r in &column_rows {
        let col = r.get_str("name")?.to_owned();
        if r.get_i64("pk")? > 0 {
            pk.push((r.get_i64("pk")?, col.clone()));
        }
        columns.push(ColumnInfo {
            name: col,
            data_type: r.get_str("type")?.to_owned(),
            not_null: r.get_bool("not_null")?,
            default: r.get_opt_str("dflt_value")?.map(str::to_owned),
        });
    }
    pk.sort();
    Ok(Some(TableSchema {
        name: table.to_owned(),
        columns,
        primary_key: pk.into_iter().map(|(_, c)| c).collect(),
        foreign_keys: foreign_keys(conn, &name)?,
        indexes: indexes(conn, &name)?,
    }))
}

fn foreign_keys(conn: &Connection, name: &[SqlValue]) -> Result<Vec<ForeignKeyInfo>, StoreError> {
    let mut by_id: BTreeMap<i64, ForeignKeyInfo> = BTreeMap::new();
    for r in query(conn, FOREIGN_KEYS, name)? {
        let fk = by_id.entry(r.get_i64("id")?).or_insert_with(|| ForeignKeyInfo {
            columns: Vec::new(),
            references_table: String::new(),
            references_columns: Vec::new(),
            on_delete: String::new(),
        });
        fk.columns.push(r.get_str("from_col")?.to_owned());
        fk.references_table = r.get_str("ref_table")?.to_owned();
        fk.references_columns.push(r.get_opt_str("to_col")?.unwrap_or_default().to_owned());
        fk.on_delete = r.get_str("on_delete")?.to_uppercase();
    }
    Ok(by_id.into_values().collect())
}

fn indexes(conn: &Connection, name: &[SqlValue]) -> Result<Vec<IndexInfo>, StoreError> {
    let mut out = Vec::new();
    for r in query(conn, INDEXES, name)? {
        let index = r.get_str("name")?.to_owned();
        let cols = query(conn, INDEX_COLUMNS, &[SqlValue::from(index.as_str())])?
            .iter()
            .map(|c| c.get_str("name").map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()?;
        out.push(IndexInfo { name: index, columns: cols, unique: r.get_bool("is_unique")? });
    }
    Ok(out)
}

#[async_trait]
impl SchemaIntrospection for Sqlite {
    async fn schema_tables(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn.lock().await;
        query(&conn, TABLES, &[])?.iter().map(|r| r.get_str("name").map(str::to_owned)).collect()
    }

    async fn schema_table(&self, table: &str) -> Result<Option<TableSchema>, StoreError> {
        let conn = self.conn.lock().await;
        describe(&conn, table)
    }

    async fn schema_table_is_empty(&self, table: &str) -> Result<bool, StoreError> {
        let sql = format!("SELECT 1 AS one FROM {} LIMIT 1", jadpo_core::sql::identifier(table)?);
        let conn = self.conn.lock().await;
        Ok(query(&conn, &sql, &[])?.is_empty())
    }
}
