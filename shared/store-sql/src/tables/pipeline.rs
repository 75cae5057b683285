//! `PipelineSql`: the slots of the pipeline role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for the pipeline's tables. Parameters are documented per field.
    pub struct PipelineSql {
        /// One outbox row.
        outbox_insert: OutboxInsert(
            id: String,
            event_type: String,
            payload: String,
            encoding: i64,
            traceparent: Option<String>,
            tracestate: Option<String>,
            chain_depth: i64,
            source: String,
            request_id: Option<String>,
            created_at: DateTime<Utc>,
        ),
        /// `deliveries` is a JSON array of `{"id", "subscriber"}`: one row each, due at once, in one
        /// statement.
        deliveries_insert: DeliveriesInsert(
            outbox_id: String,
            created_at: DateTime<Utc>,
            deliveries: serde_json::Value,
        ),
        /// Returns a delivery joined with its outbox row (the columns a delivery is read from).
        delivery_get: DeliveryGet(id: String),
        /// `ids` a JSON array: the deliveries among them, each joined with its outbox row.
        deliveries_get: DeliveriesGet(ids: serde_json::Value),
        /// Pending → handled.
        delivery_handled: DeliveryHandled(id: String, now: DateTime<Utc>),
        /// `ids` a JSON array: each pending one → handled, in one statement.
        deliveries_handled: DeliveriesHandled(ids: serde_json::Value, now: DateTime<Utc>),
        /// Pending stays pending, due at `retry_at`.
        delivery_retry: DeliveryRetry(
            id: String,
            now: DateTime<Utc>,
            failure: String,
            retry_at: DateTime<Utc>,
        ),
        /// Pending → dead.
        delivery_dead: DeliveryDead(id: String, now: DateTime<Utc>, failure: String),
        /// Pending stays pending, due at `until`, its attempts unchanged (it was not attempted).
        delivery_defer: DeliveryDefer(id: String, reason: String, until: DateTime<Utc>),
        /// Returns `id, traceparent` of the claimed rows.
        deliveries_claim_due: DeliveriesClaimDue(
            now: DateTime<Utc>,
            lost_before: DateTime<Utc>,
            limit: i64,
        ),
        /// Returns `n`: pending deliveries stamped before `lost_before`.
        deliveries_count_sent_before: DeliveriesCountSentBefore(lost_before: DateTime<Utc>),
        /// `ids` a JSON array: stamp never-attempted, unstamped pending deliveries.
        deliveries_mark_enqueued: DeliveriesMarkEnqueued(
            ids: serde_json::Value,
            now: DateTime<Utc>,
        ),
        /// `ids` a JSON array: clear the stamp of pending deliveries.
        deliveries_unmark_enqueued: DeliveriesUnmarkEnqueued(ids: serde_json::Value),
        /// `status` and `subscriber` may be NULL (any). Returns deliveries, newest first.
        deliveries_list: DeliveriesList(
            status: Option<String>,
            subscriber: Option<String>,
            limit: i64,
        ),
        /// Inserting nothing on conflict.
        handled_insert: HandledInsert(delivery_id: String, subscriber: String, now: DateTime<Utc>),
        /// `handled` a JSON array of `{"id", "subscriber"}`; inserting nothing on conflict.
        /// Returns `delivery_id` of each row inserted.
        handled_insert_many: HandledInsertMany(handled: serde_json::Value, now: DateTime<Utc>),
        /// Delete an expired key.
        idempotency_delete_expired: IdempotencyDeleteExpired(
            scope: String,
            key: String,
            now: DateTime<Utc>,
        ),
        /// Inserting nothing on conflict.
        idempotency_insert: IdempotencyInsert(
            scope: String,
            key: String,
            digest: String,
            now: DateTime<Utc>,
            expires_at: DateTime<Utc>,
        ),
        /// Claims the key in one statement where the dialect can: inserts it, or takes over an
        /// expired one, returning a row (`claimed`) either way; no row when a live key holds it
        /// (its response is then read by `idempotency_select`). A dialect that leaves it out runs
        /// `idempotency_delete_expired` and `idempotency_insert` instead.
        idempotency_claim: IdempotencyInsert(..): optional,
        /// Returns `request_digest, response_status, response_body`.
        idempotency_select: IdempotencySelect(scope: String, key: String),
        /// The response stored under the key.
        idempotency_store: IdempotencyStore(scope: String, key: String, status: i64, body: String),
    }
}
