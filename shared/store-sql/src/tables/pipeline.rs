//! `PipelineSql`: the slots of the pipeline role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for the pipeline's tables. Parameters are documented per field.
    pub struct PipelineSql {
        /// One outbox row.
        outbox_insert(id, event_type, payload, encoding, traceparent, tracestate, chain_depth, source, request_id, created_at),
        /// `deliveries` is a JSON array of `{"id", "subscriber"}`: one row each, due at once, in one
        /// statement.
        deliveries_insert(outbox_id, created_at, deliveries),
        /// Returns a delivery joined with its outbox row (the columns a delivery is read from).
        delivery_get(id),
        /// `ids` a JSON array: the deliveries among them, each joined with its outbox row.
        deliveries_get(ids),
        /// Pending → handled.
        delivery_handled(id, now),
        /// `ids` a JSON array: each pending one → handled, in one statement.
        deliveries_handled(ids, now),
        /// Pending stays pending, due at `retry_at`.
        delivery_retry(id, now, failure, retry_at),
        /// Pending → dead.
        delivery_dead(id, now, failure),
        /// Pending stays pending, due at `until`, its attempts unchanged (it was not attempted).
        delivery_defer(id, reason, until),
        /// Returns `id, traceparent` of the claimed rows.
        deliveries_claim_due(now, lost_before, limit),
        /// Returns `n`: pending deliveries stamped before `lost_before`.
        deliveries_count_sent_before(lost_before),
        /// `ids` a JSON array: stamp never-attempted, unstamped pending deliveries.
        deliveries_mark_enqueued(ids, now),
        /// `ids` a JSON array: clear the stamp of pending deliveries.
        deliveries_unmark_enqueued(ids),
        /// `status` and `subscriber` may be NULL (any). Returns deliveries, newest first.
        deliveries_list(status, subscriber, limit),
        /// Inserting nothing on conflict.
        handled_insert(delivery_id, subscriber, now),
        /// `handled` a JSON array of `{"id", "subscriber"}`; inserting nothing on conflict.
        /// Returns `delivery_id` of each row inserted.
        handled_insert_many(handled, now),
        /// Delete an expired key.
        idempotency_delete_expired(scope, key, now),
        /// Inserting nothing on conflict.
        idempotency_insert(scope, key, digest, now, expires_at),
        /// Returns `request_digest, response_status, response_body`.
        idempotency_select(scope, key),
        /// The response stored under the key.
        idempotency_store(scope, key, status, body),
    }
}
