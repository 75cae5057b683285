//! [`PgTx`]: a transaction on one pooled connection, and the value mapping both ways.

use std::any::Any;
use std::error::Error;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use deadpool_postgres::{ClientWrapper, Object};
use jadpo_core::{Dialect, Row, SqlValue, StoreError, Transaction};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement};

use crate::error::{DriverError, translate};

/// An open PostgreSQL transaction; the type [`Transaction::driver`] downcasts to.
///
/// ```text
/// let pg = tx.driver().downcast_mut::<jadpo_store_postgres::PgTx>().unwrap();
/// pg.client().await?.execute("LOCK TABLE orders IN SHARE MODE", &[]).await?;
/// ```
///
/// Its `BEGIN` goes out with its first statement, pipelined on the connection (one round trip
/// where there were two: a transaction's first statement waits for nothing more than it did);
/// a transaction that runs no statement sends nothing at all.
///
/// Dropped without `commit`, it is rolled back on a background task; if that fails, the
/// connection is closed rather than returned to the pool mid-transaction.
pub struct PgTx {
    client: Option<Object>,
    /// `BEGIN` has been sent.
    begun: bool,
}

impl PgTx {
    pub(crate) fn begin(client: Object) -> Self {
        Self { client: Some(client), begun: false }
    }

    /// The driver client, inside this transaction (begun now if no statement has run yet).
    pub async fn client(&mut self) -> Result<&Client, StoreError> {
        if !std::mem::replace(&mut self.begun, true) {
            self.wrapper().batch_execute("BEGIN").await.map_err(db)?;
        }
        Ok(self.wrapper())
    }

    fn wrapper(&self) -> &ClientWrapper {
        match &self.client {
            Some(object) => object,
            // reason: `client` is only taken by commit/rollback/drop, which consume the handle.
            None => unreachable!("PgTx used after it finished"),
        }
    }

    async fn finish(&mut self, statement: &str) -> Result<(), StoreError> {
        let client = self.client.take().ok_or_else(|| StoreError::internal("finished twice"))?;
        if !self.begun {
            return Ok(()); // nothing was sent: nothing to end
        }
        match client.batch_execute(statement).await {
            Ok(()) => Ok(()),
            Err(e) => {
                // Whatever state the session is in now, it is not one to hand to someone else.
                let _ = Object::take(client);
                Err(db(e))
            }
        }
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        if !self.begun {
            return; // nothing was sent: the connection goes back to the pool as it came
        }
        let mut guard = DiscardUnlessDisarmed(Some(client));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let rolled_back = match guard.0.as_ref() {
                    Some(c) => c.batch_execute("ROLLBACK").await.is_ok(),
                    None => false,
                };
                if rolled_back {
                    // Clean again: hand the connection back to the pool.
                    drop(guard.0.take());
                }
            });
        }
    }
}

/// Closes the connection on drop unless it was handed back (set to `None`) after a clean rollback.
struct DiscardUnlessDisarmed(Option<Object>);

impl Drop for DiscardUnlessDisarmed {
    fn drop(&mut self) {
        if let Some(object) = self.0.take() {
            let _ = Object::take(object);
        }
    }
}

/// Runs `statement`; the transaction's `first` goes out right behind its `BEGIN`, pipelined (both
/// requests are sent before either answer is awaited, and the connection runs them in order).
/// `begun` is set before this is awaited: were the future dropped unpolled, the rollback sent
/// for a `BEGIN` never sent only draws a warning, while a `BEGIN` sent and never rolled back
/// would hand an open transaction back to the pool.
async fn within<T>(
    client: &ClientWrapper,
    first: bool,
    statement: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    if !first {
        return statement.await;
    }
    let begin = async { client.batch_execute("BEGIN").await.map_err(db) };
    let ((), out) = tokio::try_join!(begin, statement)?;
    Ok(out)
}

fn db(e: tokio_postgres::Error) -> StoreError {
    translate(DriverError::Db(e))
}

async fn prepare(client: &ClientWrapper, sql: &str) -> Result<Statement, StoreError> {
    client.prepare_cached(sql).await.map_err(db)
}

#[async_trait]
impl Transaction for PgTx {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        let first = !std::mem::replace(&mut self.begun, true);
        let client = self.wrapper();
        within(client, first, execute(client, sql, params)).await
    }

    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        let first = !std::mem::replace(&mut self.begun, true);
        let client = self.wrapper();
        within(client, first, query(client, sql, params)).await
    }

    async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        let first = !std::mem::replace(&mut self.begun, true);
        let client = self.wrapper();
        within(client, first, async { client.batch_execute(sql).await.map_err(db) }).await
    }

    async fn commit(mut self: Box<Self>) -> Result<(), StoreError> {
        self.finish("COMMIT").await
    }

    async fn rollback(mut self: Box<Self>) -> Result<(), StoreError> {
        self.finish("ROLLBACK").await
    }

    fn driver(&mut self) -> &mut (dyn Any + Send) {
        self
    }
}

/// Runs one statement and returns the rows it changed.
pub(crate) async fn execute(
    client: &ClientWrapper,
    sql: &str,
    params: &[SqlValue],
) -> Result<u64, StoreError> {
    let stmt = prepare(client, sql).await?;
    let bound = bind(params);
    client.execute(&stmt, &refs(&bound)).await.map_err(db)
}

/// Runs one statement and returns its rows.
pub(crate) async fn query(
    client: &ClientWrapper,
    sql: &str,
    params: &[SqlValue],
) -> Result<Vec<Row>, StoreError> {
    let stmt = prepare(client, sql).await?;
    let bound = bind(params);
    let rows = client.query(&stmt, &refs(&bound)).await.map_err(db)?;
    let columns: Arc<[String]> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    rows.iter()
        .map(|row| {
            let values = stmt
                .columns()
                .iter()
                .enumerate()
                .map(|(i, col)| read(row, i, col.name(), col.type_()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Row::new(Arc::clone(&columns), values))
        })
        .collect()
}

fn bind(params: &[SqlValue]) -> Vec<Param<'_>> {
    params.iter().map(Param).collect()
}

fn refs<'a>(bound: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    bound.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// A [`SqlValue`] bound by the type PostgreSQL inferred for its placeholder.
#[derive(Debug)]
struct Param<'a>(&'a SqlValue);

type BoxError = Box<dyn Error + Sync + Send>;

fn mismatch(value: &SqlValue, ty: &Type) -> BoxError {
    format!(
        "cannot bind a {} value to a parameter of type {ty}; cast the placeholder",
        value.kind()
    )
    .into()
}

fn is_text(ty: &Type) -> bool {
    matches!(*ty, Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN)
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        let v = self.0;
        match v {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Bool(b) if *ty == Type::BOOL => b.to_sql(ty, out),
            SqlValue::Int(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT8 => i.to_sql(ty, out),
                #[allow(clippy::cast_precision_loss, reason = "the caller bound an int to a float")]
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                _ => Err(mismatch(v, ty)),
            },
            SqlValue::Float(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                #[allow(
                    clippy::cast_possible_truncation,
                    reason = "the column is single precision"
                )]
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                _ => Err(mismatch(v, ty)),
            },
            SqlValue::Text(s) if is_text(ty) => s.as_str().to_sql(ty, out),
            SqlValue::Text(s) if matches!(*ty, Type::JSON | Type::JSONB) => {
                serde_json::from_str::<serde_json::Value>(s)?.to_sql(ty, out)
            }
            SqlValue::Bytes(b) if *ty == Type::BYTEA => b.as_slice().to_sql(ty, out),
            SqlValue::Json(j) if matches!(*ty, Type::JSON | Type::JSONB) => j.to_sql(ty, out),
            SqlValue::Json(j) if is_text(ty) => j.to_string().to_sql(ty, out),
            SqlValue::Timestamp(t) => match *ty {
                Type::TIMESTAMPTZ => t.to_sql(ty, out),
                Type::TIMESTAMP => t.naive_utc().to_sql(ty, out),
                Type::INT8 => t.timestamp_millis().to_sql(ty, out),
                _ => Err(mismatch(v, ty)),
            },
            _ => Err(mismatch(v, ty)),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn read(
    row: &tokio_postgres::Row,
    i: usize,
    name: &str,
    ty: &Type,
) -> Result<SqlValue, StoreError> {
    fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
        row: &'a tokio_postgres::Row,
        i: usize,
    ) -> Result<Option<T>, StoreError> {
        row.try_get::<_, Option<T>>(i).map_err(db)
    }
    let value = match *ty {
        Type::BOOL => get::<bool>(row, i)?.map(SqlValue::Bool),
        Type::INT2 => get::<i16>(row, i)?.map(|v| SqlValue::Int(v.into())),
        Type::INT4 => get::<i32>(row, i)?.map(|v| SqlValue::Int(v.into())),
        Type::INT8 => get::<i64>(row, i)?.map(SqlValue::Int),
        Type::OID => get::<u32>(row, i)?.map(|v| SqlValue::Int(v.into())),
        Type::FLOAT4 => get::<f32>(row, i)?.map(|v| SqlValue::Float(v.into())),
        Type::FLOAT8 => get::<f64>(row, i)?.map(SqlValue::Float),
        Type::BYTEA => get::<Vec<u8>>(row, i)?.map(SqlValue::Bytes),
        Type::JSON | Type::JSONB => get::<serde_json::Value>(row, i)?.map(SqlValue::Json),
        Type::TIMESTAMPTZ => get::<DateTime<Utc>>(row, i)?.map(SqlValue::Timestamp),
        Type::TIMESTAMP => get::<NaiveDateTime>(row, i)?.map(|v| SqlValue::Timestamp(v.and_utc())),
        ref t if is_text(t) => get::<String>(row, i)?.map(SqlValue::Text),
        ref other => {
            return Err(StoreError::invalid(format!(
                "column {name:?} has type {other}, which is not read portably; cast it in the query \
                 (for example {name}::text)"
            )));
        }
    };
    Ok(value.unwrap_or(SqlValue::Null))
}
