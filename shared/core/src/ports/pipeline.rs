//! The pipeline role: the outbox, deliveries, handled records and idempotency keys.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::delivery::Delivery;
use crate::model::delivery::DeliveryFilter;
use crate::model::delivery::NewDelivery;
use crate::model::delivery::NewEvent;
use crate::model::delivery::Outcome;
use crate::model::delivery::QueuedDelivery;
use crate::model::delivery::StoredResponse;
use crate::transaction::Transaction;

/// The pipeline's role: the outbox, deliveries, handled records and idempotency keys.
#[async_trait]
pub trait PipelineStore: Send + Sync {
    /// Writes an outbox row and its deliveries inside `tx`.
    async fn outbox_append(
        &self,
        tx: &mut dyn Transaction,
        event: &NewEvent,
        deliveries: &[NewDelivery],
    ) -> Result<(), StoreError>;

    /// A delivery with its event.
    async fn delivery_get(&self, id: &str) -> Result<Option<Delivery>, StoreError>;

    /// The deliveries among `ids`, each with its event, in no particular order (an id with no
    /// row is left out): one round trip for a batch of messages.
    async fn deliveries_get(&self, ids: &[String]) -> Result<Vec<Delivery>, StoreError>;

    /// Records a handled attempt on each pending delivery of `ids` in one statement; returns how
    /// many changed (one no longer pending is left alone).
    async fn deliveries_record_handled(
        &self,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// As [`deliveries_record_handled`](Self::deliveries_record_handled), inside `tx`: the
    /// outcomes commit with the subscribers' writes when both live in this store.
    async fn deliveries_mark_handled(
        &self,
        tx: &mut dyn Transaction,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Records an attempt's outcome on a pending delivery; returns `false` (changing nothing)
    /// when the delivery is no longer pending.
    async fn delivery_record_outcome(
        &self,
        id: &str,
        outcome: &Outcome,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Marks up to `limit` due deliveries as put on the queue at `now` and returns their ids:
    /// pending, due by `now`, and either never enqueued or enqueued before `lost_before`.
    /// Concurrent callers never claim the same delivery.
    async fn deliveries_claim_due(
        &self,
        now: DateTime<Utc>,
        lost_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<QueuedDelivery>, StoreError>;

    /// How many pending deliveries were put on the queue before `lost_before` and have not
    /// finished: those a sweep would presume lost.
    async fn deliveries_count_sent_before(
        &self,
        lost_before: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Marks first attempts as put on the queue at `now` (after the send right after commit);
    /// a delivery already attempted or marked is left alone.
    async fn deliveries_mark_enqueued(
        &self,
        ids: &[String],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Clears the enqueued mark of deliveries whose send failed, so the relay sends them again.
    async fn deliveries_unmark_enqueued(&self, ids: &[String]) -> Result<(), StoreError>;

    /// Deliveries matching `filter`, newest first.
    async fn deliveries_list(&self, filter: &DeliveryFilter) -> Result<Vec<Delivery>, StoreError>;

    /// Inserts the handled record of `delivery_id` inside `tx`; `false` when one exists already.
    async fn handled_insert(
        &self,
        tx: &mut dyn Transaction,
        delivery_id: &str,
        subscriber: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Inserts the handled records of `handled` (delivery id, subscriber) inside `tx` in one
    /// statement; returns the ids inserted (an id with a record already is left out).
    async fn handled_insert_many(
        &self,
        tx: &mut dyn Transaction,
        handled: &[(&str, &str)],
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;

    /// Claims `(scope, key)` inside `tx` for a request with `digest`, first deleting an expired
    /// record. `None` means claimed (this request runs); `Some` is the stored response of an
    /// earlier request. A concurrent claim of the same key waits for this transaction.
    async fn idempotency_claim(
        &self,
        tx: &mut dyn Transaction,
        scope: &str,
        key: &str,
        digest: &str,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<Option<StoredResponse>, StoreError>;

    /// Stores the response of a claimed key inside `tx`.
    async fn idempotency_store_response(
        &self,
        tx: &mut dyn Transaction,
        scope: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), StoreError>;
}
