//! The pipeline role implemented once over each adapter's own SQL.
//!
//! An adapter supplies its dialect's statements as a [`crate::PipelineSql`] (the text lives
//! beside the adapter, as every SQL statement does) and gets [`PipelineStore`] from the
//! implementation here, so the two adapters cannot drift in behaviour, only in SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::delivery::{
    Delivery, DeliveryFilter, ENCODING_JSON_V1, NewDelivery, NewEvent, Outcome, QueuedDelivery,
    StoredResponse,
};
use jadpo_core::ports::PipelineStore;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::rows::{self, first_count};
use crate::store::SqlStore;
use crate::tables::pipeline;

crate::columns! {
    /// A handled record inserted (`PipelineSql::handled_insert_many`).
    struct DeliveryId { delivery_id: String }
    /// The response kept under an idempotency key (`PipelineSql::idempotency_select`).
    struct StoredColumns { request_digest: String, response_status: i64, response_body: String }
}

fn id_list(ids: &[String]) -> serde_json::Value {
    ids.iter().map(|id| serde_json::Value::String(id.clone())).collect()
}

#[async_trait]
impl<C: TransactionalStore> PipelineStore for SqlStore<C> {
    async fn outbox_append(
        &self,
        tx: &mut dyn Transaction,
        event: &NewEvent,
        deliveries: &[NewDelivery],
    ) -> Result<(), StoreError> {
        let sql = self.sql.pipeline;
        let params = pipeline::OutboxInsert {
            id: event.id.as_str().into(),
            event_type: event.event_type.as_str().into(),
            payload: event.payload.to_string(),
            encoding: ENCODING_JSON_V1,
            traceparent: event.traceparent.clone(),
            tracestate: event.tracestate.clone(),
            chain_depth: event.chain_depth.into(),
            source: event.source.as_str().into(),
            request_id: event.request_id.clone(),
            created_at: event.created_at,
        };
        sql.outbox_insert.execute(tx, params).await?;
        if deliveries.is_empty() {
            return Ok(());
        }
        let rows: Vec<serde_json::Value> = deliveries
            .iter()
            .map(|d| serde_json::json!({"id": d.id, "subscriber": d.subscriber}))
            .collect();
        let params = pipeline::DeliveriesInsert {
            outbox_id: event.id.as_str().into(),
            created_at: event.created_at,
            deliveries: rows.into(),
        };
        sql.deliveries_insert.execute(tx, params).await?;
        Ok(())
    }

    async fn delivery_get(&self, id: &str) -> Result<Option<Delivery>, StoreError> {
        let sql = self.sql.pipeline.delivery_get;
        let rows = sql.query_once(self, pipeline::DeliveryGet { id: id.into() }).await?;
        rows.first().map(rows::delivery).transpose()
    }

    async fn deliveries_get(&self, ids: &[String]) -> Result<Vec<Delivery>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = self.sql.pipeline.deliveries_get;
        let rows = sql.query_once(self, pipeline::DeliveriesGet { ids: id_list(ids) }).await?;
        rows.iter().map(rows::delivery).collect()
    }

    async fn deliveries_record_handled(
        &self,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let sql = self.sql.pipeline.deliveries_handled;
        sql.execute_once(self, pipeline::DeliveriesHandled { ids: id_list(ids), now }).await
    }

    async fn deliveries_mark_handled(
        &self,
        tx: &mut dyn Transaction,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        self.sql
            .pipeline
            .deliveries_handled
            .execute(tx, pipeline::DeliveriesHandled { ids: id_list(ids), now })
            .await
    }

    async fn delivery_record_outcome(
        &self,
        id: &str,
        outcome: &Outcome,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let sql = self.sql.pipeline;
        let changed = match outcome {
            Outcome::Handled => {
                sql.delivery_handled
                    .execute_once(self, pipeline::DeliveryHandled { id: id.into(), now })
                    .await?
            }
            Outcome::Failed { failure, retry_at: Some(at) } => {
                let params = pipeline::DeliveryRetry {
                    id: id.into(),
                    now,
                    failure: failure.as_str().into(),
                    retry_at: (*at),
                };
                sql.delivery_retry.execute_once(self, params).await?
            }
            Outcome::Failed { failure, retry_at: None } => {
                let params =
                    pipeline::DeliveryDead { id: id.into(), now, failure: failure.as_str().into() };
                sql.delivery_dead.execute_once(self, params).await?
            }
            Outcome::Deferred { reason, until } => {
                let params = pipeline::DeliveryDefer {
                    id: id.into(),
                    reason: reason.as_str().into(),
                    until: (*until),
                };
                sql.delivery_defer.execute_once(self, params).await?
            }
        };
        Ok(changed == 1)
    }

    async fn deliveries_claim_due(
        &self,
        now: DateTime<Utc>,
        lost_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<QueuedDelivery>, StoreError> {
        let sql = self.sql.pipeline.deliveries_claim_due;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows =
            sql.query_once(self, pipeline::DeliveriesClaimDue { now, lost_before, limit }).await?;
        rows.iter().map(|r| crate::read_row!(r => QueuedDelivery { id, traceparent })).collect()
    }

    async fn deliveries_count_sent_before(
        &self,
        lost_before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let sql = self.sql.pipeline.deliveries_count_sent_before;
        let rows =
            sql.query_once(self, pipeline::DeliveriesCountSentBefore { lost_before }).await?;
        first_count(&rows)
    }

    async fn deliveries_mark_enqueued(
        &self,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        // Marks made at once share one statement (see `marks`).
        let sql = self.sql.pipeline.deliveries_mark_enqueued;
        let flush = |batch: Vec<String>, at: DateTime<Utc>| {
            sql.execute_advisory(
                self,
                pipeline::DeliveriesMarkEnqueued { ids: id_list(&batch), now: at },
            )
        };
        self.marks.mark(ids, now, flush).await
    }

    async fn deliveries_unmark_enqueued(&self, ids: &[String]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let sql = self.sql.pipeline.deliveries_unmark_enqueued;
        sql.execute_once(self, pipeline::DeliveriesUnmarkEnqueued { ids: id_list(ids) })
            .await
            .map(|_| ())
    }

    async fn deliveries_list(&self, filter: &DeliveryFilter) -> Result<Vec<Delivery>, StoreError> {
        let sql = self.sql.pipeline.deliveries_list;
        let params = pipeline::DeliveriesList {
            status: filter.status.map(|s| s.as_str().to_owned()),
            subscriber: filter.subscriber.clone(),
            limit: i64::from(filter.limit.max(1)),
        };
        sql.query_once(self, params).await?.iter().map(rows::delivery).collect()
    }

    async fn handled_insert(
        &self,
        tx: &mut dyn Transaction,
        delivery_id: &str,
        subscriber: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let sql = self.sql.pipeline.handled_insert;
        let params = pipeline::HandledInsert {
            delivery_id: delivery_id.into(),
            subscriber: subscriber.into(),
            now,
        };
        Ok(sql.execute(tx, params).await? == 1)
    }

    async fn handled_insert_many(
        &self,
        tx: &mut dyn Transaction,
        handled: &[(&str, &str)],
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        if handled.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<serde_json::Value> = handled
            .iter()
            .map(|(id, subscriber)| serde_json::json!({"id": id, "subscriber": subscriber}))
            .collect();
        let sql = self.sql.pipeline.handled_insert_many;
        let rows = sql.query(tx, pipeline::HandledInsertMany { handled: rows.into(), now }).await?;
        rows.iter().map(|r| DeliveryId::read(r).map(|d| d.delivery_id)).collect()
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
        let sql = self.sql.pipeline;
        let params = pipeline::IdempotencyInsert {
            scope: scope.into(),
            key: key.into(),
            digest: digest.into(),
            now,
            expires_at,
        };
        let claimed = match sql.idempotency_claim {
            Some(one) => one.query_opt(tx, params).await?.is_some(),
            None => {
                let expired = pipeline::IdempotencyDeleteExpired {
                    scope: scope.into(),
                    key: key.into(),
                    now,
                };
                sql.idempotency_delete_expired.execute(tx, expired).await?;
                sql.idempotency_insert.execute(tx, params).await? == 1
            }
        };
        if claimed {
            return Ok(None);
        }
        let row = sql
            .idempotency_select
            .query_one(tx, pipeline::IdempotencySelect { scope: scope.into(), key: key.into() })
            .await?;
        let stored = StoredColumns::read(&row)?;
        let status = u16::try_from(stored.response_status)
            .map_err(|_| StoreError::internal("stored response status out of range"))?;
        Ok(Some(StoredResponse {
            request_digest: stored.request_digest,
            status,
            body: stored.response_body,
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
        let sql = self.sql.pipeline.idempotency_store;
        sql.execute(
            tx,
            pipeline::IdempotencyStore {
                scope: scope.into(),
                key: key.into(),
                status: i64::from(status),
                body: body.into(),
            },
        )
        .await?;
        Ok(())
    }
}
