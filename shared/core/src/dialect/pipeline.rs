//! The pipeline role implemented once over each adapter's own SQL.
//!
//! An adapter supplies its dialect's statements as a [`PipelineSql`] (the text lives beside the
//! adapter, as every SQL statement does) and gets [`PipelineStore`] from the blanket
//! implementation here, so the two adapters cannot drift in behaviour, only in SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::delivery::{
    Delivery, DeliveryFilter, ENCODING_JSON_V1, NewDelivery, NewEvent, Outcome, QueuedDelivery,
    StoredResponse,
};
use crate::ports::PipelineStore;
use crate::sql::SqlValue;
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's statements for the pipeline's tables. Parameters are documented per field.
#[derive(Debug)]
pub struct PipelineSql {
    /// `(id, event_type, payload, encoding, traceparent, tracestate, chain_depth, source, request_id, created_at)`.
    pub outbox_insert: &'static str,
    /// `(outbox_id, created_at, deliveries)` where `deliveries` is a JSON array of
    /// `{"id", "subscriber"}`: one row each, due at once, in one statement.
    pub deliveries_insert: &'static str,
    /// `(id)` → a delivery joined with its outbox row ([`Delivery::from_row`]'s columns).
    pub delivery_get: &'static str,
    /// `(id, now)`: pending → handled.
    pub delivery_handled: &'static str,
    /// `(id, now, failure, retry_at)`: pending stays pending, due at `retry_at`.
    pub delivery_retry: &'static str,
    /// `(id, now, failure)`: pending → dead.
    pub delivery_dead: &'static str,
    /// `(now, lost_before, limit)` → `id, traceparent` of the claimed rows.
    pub deliveries_claim_due: &'static str,
    /// `(ids, now)`, `ids` a JSON array: stamp never-attempted, unstamped pending deliveries.
    pub deliveries_mark_enqueued: &'static str,
    /// `(ids)`, a JSON array: clear the stamp of pending deliveries.
    pub deliveries_unmark_enqueued: &'static str,
    /// `(status or NULL, subscriber or NULL, limit)` → deliveries, newest first.
    pub deliveries_list: &'static str,
    /// `(delivery_id, subscriber, now)`, inserting nothing on conflict.
    pub handled_insert: &'static str,
    /// `(scope, key, now)`: delete an expired key.
    pub idempotency_delete_expired: &'static str,
    /// `(scope, key, digest, now, expires_at)`, inserting nothing on conflict.
    pub idempotency_insert: &'static str,
    /// `(scope, key)` → `request_digest, response_status, response_body`.
    pub idempotency_select: &'static str,
    /// `(scope, key, status, body)`.
    pub idempotency_store: &'static str,
}

/// An adapter that speaks the pipeline through its own [`PipelineSql`].
pub trait PipelineDialect: TransactionalStore {
    /// The adapter's statements.
    fn pipeline_sql(&self) -> &'static PipelineSql;
}

fn id_list(ids: &[String]) -> SqlValue {
    SqlValue::Json(ids.iter().map(|id| serde_json::Value::String(id.clone())).collect())
}

fn text(v: &Option<String>) -> SqlValue {
    v.as_deref().map_or(SqlValue::Null, SqlValue::from)
}

#[async_trait]
impl<S: PipelineDialect> PipelineStore for S {
    async fn outbox_append(
        &self,
        tx: &mut dyn Transaction,
        event: &NewEvent,
        deliveries: &[NewDelivery],
    ) -> Result<(), StoreError> {
        let sql = self.pipeline_sql();
        let params = [
            event.id.as_str().into(),
            event.event_type.as_str().into(),
            event.payload.to_string().into(),
            ENCODING_JSON_V1.into(),
            text(&event.traceparent),
            text(&event.tracestate),
            event.chain_depth.into(),
            event.source.as_str().into(),
            text(&event.request_id),
            event.created_at.into(),
        ];
        tx.execute(sql.outbox_insert, &params).await?;
        if deliveries.is_empty() {
            return Ok(());
        }
        let rows: Vec<serde_json::Value> = deliveries
            .iter()
            .map(|d| serde_json::json!({"id": d.id, "subscriber": d.subscriber}))
            .collect();
        let params =
            [event.id.as_str().into(), event.created_at.into(), SqlValue::Json(rows.into())];
        tx.execute(sql.deliveries_insert, &params).await?;
        Ok(())
    }

    async fn delivery_get(&self, id: &str) -> Result<Option<Delivery>, StoreError> {
        let sql = self.pipeline_sql().delivery_get;
        let rows = self.query_once(sql, &[id.into()]).await?;
        rows.first().map(Delivery::from_row).transpose()
    }

    async fn delivery_record_outcome(
        &self,
        id: &str,
        outcome: &Outcome,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let sql = self.pipeline_sql();
        let (statement, params): (&str, Vec<SqlValue>) = match outcome {
            Outcome::Handled => (sql.delivery_handled, vec![id.into(), now.into()]),
            Outcome::Failed { failure, retry_at: Some(at) } => (
                sql.delivery_retry,
                vec![id.into(), now.into(), failure.as_str().into(), (*at).into()],
            ),
            Outcome::Failed { failure, retry_at: None } => {
                (sql.delivery_dead, vec![id.into(), now.into(), failure.as_str().into()])
            }
        };
        Ok(self.execute_once(statement, &params).await? == 1)
    }

    async fn deliveries_claim_due(
        &self,
        now: DateTime<Utc>,
        lost_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<QueuedDelivery>, StoreError> {
        let sql = self.pipeline_sql().deliveries_claim_due;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.query_once(sql, &[now.into(), lost_before.into(), limit.into()]).await?;
        rows.iter()
            .map(|r| {
                Ok(QueuedDelivery {
                    id: r.get_str("id")?.to_owned(),
                    traceparent: r.get_opt_str("traceparent")?.map(str::to_owned),
                })
            })
            .collect()
    }

    async fn deliveries_mark_enqueued(
        &self,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = self.pipeline_sql().deliveries_mark_enqueued;
        self.execute_once(sql, &[id_list(ids), now.into()]).await.map(|_| ())
    }

    async fn deliveries_unmark_enqueued(&self, ids: &[String]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = self.pipeline_sql().deliveries_unmark_enqueued;
        self.execute_once(sql, &[id_list(ids)]).await.map(|_| ())
    }

    async fn deliveries_list(&self, filter: &DeliveryFilter) -> Result<Vec<Delivery>, StoreError> {
        let sql = self.pipeline_sql().deliveries_list;
        let params = vec![
            filter.status.map_or(SqlValue::Null, |s| s.as_str().into()),
            text(&filter.subscriber),
            i64::from(filter.limit.max(1)).into(),
        ];
        self.query_once(sql, &params).await?.iter().map(Delivery::from_row).collect()
    }

    async fn handled_insert(
        &self,
        tx: &mut dyn Transaction,
        delivery_id: &str,
        subscriber: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let sql = self.pipeline_sql().handled_insert;
        Ok(tx.execute(sql, &[delivery_id.into(), subscriber.into(), now.into()]).await? == 1)
    }

    async fn idempotency_claim(
        &self,
        tx: &mut dyn Transaction,
        scope: &str,
        key: &str,
        digest: &str,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<Option<StoredResponse>, StoreError> {
        let sql = self.pipeline_sql();
        tx.execute(sql.idempotency_delete_expired, &[scope.into(), key.into(), now.into()]).await?;
        let params = [scope.into(), key.into(), digest.into(), now.into(), expires_at.into()];
        if tx.execute(sql.idempotency_insert, &params).await? == 1 {
            return Ok(None);
        }
        let row = tx.query_one(sql.idempotency_select, &[scope.into(), key.into()]).await?;
        let status = u16::try_from(row.get_i64("response_status")?)
            .map_err(|_| StoreError::internal("stored response status out of range"))?;
        Ok(Some(StoredResponse {
            request_digest: row.get_str("request_digest")?.to_owned(),
            status,
            body: row.get_str("response_body")?.to_owned(),
        }))
    }

    async fn idempotency_store_response(
        &self,
        tx: &mut dyn Transaction,
        scope: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), StoreError> {
        let sql = self.pipeline_sql().idempotency_store;
        tx.execute(sql, &[scope.into(), key.into(), i64::from(status).into(), body.into()]).await?;
        Ok(())
    }
}
