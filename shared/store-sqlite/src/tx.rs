//! [`SqliteTx`]: a transaction holding the store's one connection, as a member of a group
//! commit (see `group`).

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use jadpo_core::{Dialect, Row, SqlValue, StoreError, Transaction};
use rusqlite::Connection;
use rusqlite::types::{Value, ValueRef};
use tokio::sync::OwnedMutexGuard;

use crate::error::translate;
use crate::group::{self, Conn, Group, Shared};

/// An open SQLite transaction; the type [`Transaction::driver`] downcasts to.
///
/// ```text
/// let sqlite = tx.driver().downcast_mut::<jadpo_store_sqlite::SqliteTx>().unwrap();
/// sqlite.connection().execute("...", [])?;
/// ```
pub struct SqliteTx {
    /// Held from begin until commit or rollback; `None` only once commit handed it back.
    conn: Option<OwnedMutexGuard<Conn>>,
    shared: Shared,
    group: Arc<Group>,
}

impl SqliteTx {
    pub(crate) async fn begin(shared: &Shared) -> Result<Self, StoreError> {
        let mut conn = Arc::clone(shared).lock_owned().await;
        let group = conn.join()?;
        Ok(Self { conn: Some(conn), shared: Arc::clone(shared), group })
    }

    /// The driver connection, inside this transaction.
    pub fn connection(&self) -> &Connection {
        self.conn()
    }

    fn conn(&self) -> &Conn {
        match &self.conn {
            Some(conn) => conn,
            // reason: `conn` is taken only by `commit`, which consumes the transaction.
            None => unreachable!("a committed SQLite transaction was used"),
        }
    }
}

impl Drop for SqliteTx {
    fn drop(&mut self) {
        // A transaction dropped without commit is rolled back; nothing to report to.
        if let Some(conn) = self.conn.as_mut() {
            conn.undo();
        }
    }
}

#[async_trait]
impl Transaction for SqliteTx {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        execute(self.conn(), sql, params)
    }

    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        query(self.conn(), sql, params)
    }

    async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.conn().execute_batch(sql).map_err(translate)
    }

    /// Returns once the group this transaction joined has committed (its WAL synced).
    async fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        let Some(mut conn) = self.conn.take() else {
            return Err(StoreError::new(
                jadpo_core::StoreErrorKind::Internal,
                "sqlite: the transaction was already committed",
            ));
        };
        conn.release()?;
        drop(conn);
        group::wait(&self.shared, Arc::clone(&self.group)).await
    }

    async fn rollback(mut self: Box<Self>) -> Result<(), StoreError> {
        if let Some(mut conn) = self.conn.take() {
            conn.undo();
        }
        Ok(())
    }

    fn driver(&mut self) -> &mut (dyn Any + Send) {
        self
    }
}

/// Runs one statement on `conn` and returns the rows it changed.
pub(crate) fn execute(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
) -> Result<u64, StoreError> {
    let mut stmt = conn.prepare_cached(&rewrite_placeholders(sql)).map_err(translate)?;
    let changed = stmt.execute(rusqlite::params_from_iter(params.iter().map(to_value)));
    changed.map(|n| n as u64).map_err(translate)
}

/// Runs one statement on `conn` and returns its rows.
pub(crate) fn query(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
) -> Result<Vec<Row>, StoreError> {
    let mut stmt = conn.prepare_cached(&rewrite_placeholders(sql)).map_err(translate)?;
    let columns: Arc<[String]> = stmt.column_names().map(str::to_owned).collect();
    let width = columns.len();
    let mut rows =
        stmt.query(rusqlite::params_from_iter(params.iter().map(to_value))).map_err(translate)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(translate)? {
        let values = (0..width)
            .map(|i| row.get_ref(i).map(from_value_ref))
            .collect::<Result<Vec<_>, _>>()
            .map_err(translate)?;
        out.push(Row::new(Arc::clone(&columns), values));
    }
    Ok(out)
}

fn to_value(v: &SqlValue) -> Value {
    match v {
        SqlValue::Null => Value::Null,
        SqlValue::Bool(b) => Value::Integer(i64::from(*b)),
        SqlValue::Int(i) => Value::Integer(*i),
        SqlValue::Float(f) => Value::Real(*f),
        SqlValue::Text(s) => Value::Text(s.clone()),
        SqlValue::Bytes(b) => Value::Blob(b.clone()),
        SqlValue::Json(j) => Value::Text(j.to_string()),
        SqlValue::Timestamp(t) => Value::Integer(t.timestamp_millis()),
    }
}

fn from_value_ref(v: ValueRef<'_>) -> SqlValue {
    match v {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(i) => SqlValue::Int(i),
        ValueRef::Real(f) => SqlValue::Float(f),
        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => SqlValue::Bytes(b.to_vec()),
    }
}

/// Rewrites PostgreSQL-style `$1` placeholders to SQLite's `?1`, leaving string literals,
/// quoted identifiers and comments alone.
pub(crate) fn rewrite_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                out.push(c);
                let mut previous = ' ';
                for inner in chars.by_ref() {
                    out.push(inner);
                    if previous == '*' && inner == '/' {
                        break;
                    }
                    previous = inner;
                }
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => out.push('?'),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::rewrite_placeholders;

    #[test]
    fn placeholders_are_rewritten_outside_literals_and_comments() {
        assert_eq!(
            rewrite_placeholders("SELECT $1, '$2', \"$3\" -- $4\n, /* $5 */ $12"),
            "SELECT ?1, '$2', \"$3\" -- $4\n, /* $5 */ ?12"
        );
        assert_eq!(rewrite_placeholders("SELECT 'it''s $1' || $2"), "SELECT 'it''s $1' || ?2");
        assert_eq!(rewrite_placeholders("SELECT $a"), "SELECT $a");
    }
}
