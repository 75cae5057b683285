//! Schema introspection on PostgreSQL, from `pg_catalog` (in the connection's current schema).

use async_trait::async_trait;
use deadpool_postgres::Object;
use jadpo_core::ports::SchemaIntrospection;
use jadpo_core::{SqlValue, StoreError};
use jadpo_schema::table::{ColumnInfo, ForeignKeyInfo, IndexInfo, TableSchema};

use crate::Postgres;
use crate::tx::query;

const TABLES: &str = "SELECT tablename::text AS name FROM pg_catalog.pg_tables
    WHERE schemaname = current_schema() ORDER BY 1";

const COLUMNS: &str = "SELECT a.attname::text AS name,
        format_type(a.atttypid, a.atttypmod) AS data_type,
        a.attnotnull AS not_null,
        pg_get_expr(d.adbin, d.adrelid) AS default_expr
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE n.nspname = current_schema() AND c.relname = $1 AND c.relkind = 'r'
      AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum";

// An index on an expression names it `(expression)` in place of a column, as on SQLite.
const INDEXES: &str = "SELECT ic.relname::text AS name, i.indisunique AS is_unique,
        i.indisprimary AS is_primary,
        array_to_string(ARRAY(
            SELECT COALESCE(a.attname::text, '(expression)')
            FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
            LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            ORDER BY k.ord), ',') AS columns
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid
    JOIN pg_class ic ON ic.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relname = $1
    ORDER BY 1";

const FOREIGN_KEYS: &str = "SELECT con.conname::text AS name,
        array_to_string(ARRAY(
            SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
            ORDER BY k.ord), ',') AS columns,
        rc.relname::text AS ref_table,
        array_to_string(ARRAY(
            SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum
            ORDER BY k.ord), ',') AS ref_columns,
        CASE con.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'r' THEN 'RESTRICT'
            WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END AS on_delete
    FROM pg_constraint con
    JOIN pg_class c ON c.oid = con.conrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_class rc ON rc.oid = con.confrelid
    WHERE con.contype = 'f' AND n.nspname = current_schema() AND c.relname = $1
    ORDER BY 1";

fn split(list: &str) -> Vec<String> {
    list.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

async fn describe(client: &Object, table: &str) -> Result<Option<TableSchema>, StoreError> {
    let name = [SqlValue::from(table)];
    let column_rows = query(client, COLUMNS, &name).await?;
    if column_rows.is_empty() {
        return Ok(None);
    }
    let columns = column_rows
        .iter()
        .map(|r| {
            Ok(ColumnInfo {
                name: r.get_str("name")?.to_owned(),
                data_type: r.get_str("data_type")?.to_owned(),
                not_null: r.get_bool("not_null")?,
                default: r.get_opt_str("default_expr")?.map(str::to_owned),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let mut primary_key = Vec::new();
    let mut indexes = Vec::new();
    for r in query(client, INDEXES, &name).await? {
        let cols = split(r.get_str("columns")?);
        if r.get_bool("is_primary")? {
            primary_key.clone_from(&cols);
        }
        indexes.push(IndexInfo {
            name: r.get_str("name")?.to_owned(),
            columns: cols,
            unique: r.get_bool("is_unique")?,
        });
    }
    let foreign_keys = query(client, FOREIGN_KEYS, &name)
        .await?
        .iter()
        .map(|r| {
            Ok(ForeignKeyInfo {
                columns: split(r.get_str("columns")?),
                references_table: r.get_str("ref_table")?.to_owned(),
                references_columns: split(r.get_str("ref_columns")?),
                on_delete: r.get_str("on_delete")?.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok(Some(TableSchema { name: table.to_owned(), columns, primary_key, foreign_keys, indexes }))
}

#[async_trait]
impl SchemaIntrospection for Postgres {
    async fn schema_tables(&self) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        query(&client, TABLES, &[])
            .await?
            .iter()
            .map(|r| r.get_str("name").map(str::to_owned))
            .collect()
    }

    async fn schema_table(&self, table: &str) -> Result<Option<TableSchema>, StoreError> {
        let client = self.client().await?;
        describe(&client, table).await
    }

    async fn schema_table_is_empty(&self, table: &str) -> Result<bool, StoreError> {
        let sql = format!("SELECT 1 AS one FROM {} LIMIT 1", jadpo_core::sql::identifier(table)?);
        let client = self.client().await?;
        Ok(query(&client, &sql, &[]).await?.is_empty())
    }
}
