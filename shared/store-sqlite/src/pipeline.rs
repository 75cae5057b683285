//! The pipeline's statements in SQLite's dialect. One writer at a time, so claiming due
//! deliveries needs no row locks.
//!
//! A statement that addresses deliveries by a list of ids writes `+status`: the unary plus keeps
//! SQLite's planner off the `(status, next_attempt_at)` index, which it otherwise prefers for
//! `status = 'pending'` — a walk over every pending delivery, per statement, that grows with the
//! backlog (`tests/plans.rs` holds every such statement to the primary key).

use jadpo_store_sql::tables::pipeline;
use jadpo_store_sql::{PipelineSql, sql};

pub(crate) const DELIVERY_COLUMNS: &str = "d.id, d.subscriber, d.status, d.attempts, d.next_attempt_at, \
    d.enqueued_at, d.last_attempt_at, d.last_failure, d.finished_at, d.created_at, \
    o.id AS outbox_id, o.event_type, o.payload, o.chain_depth, o.created_at AS event_created_at, \
    o.encoding AS payload_encoding, o.traceparent, o.tracestate, d.held_connection, d.held_at";

/// SQLite's pipeline statements.
pub(crate) static SQL: PipelineSql = PipelineSql {
    outbox_insert: sql!(
        pipeline::OutboxInsert,
        "INSERT INTO jadpo_outbox (id, event_type, payload, encoding, traceparent, \
        tracestate, chain_depth, source, request_id, created_at) \
        VALUES ($id, $event_type, $payload, $encoding, $traceparent, $tracestate, $chain_depth, $source, $request_id, $created_at)",
    ),
    deliveries_insert: sql!(
        pipeline::DeliveriesInsert,
        "INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, next_attempt_at, \
        created_at) SELECT json_extract(value, '$.id'), $outbox_id, json_extract(value, '$.subscriber'), $created_at, $created_at \
        FROM json_each($deliveries)",
    ),
    delivery_get: sql!(
        pipeline::DeliveryGet,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = $id"
        )
    ),
    deliveries_get: sql!(
        pipeline::DeliveriesGet,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id IN (SELECT value FROM json_each($ids))"
        )
    ),
    deliveries_handled: sql!(
        pipeline::DeliveriesHandled,
        "UPDATE jadpo_deliveries SET status = 'handled', attempts = attempts + 1, \
        last_attempt_at = $now, finished_at = $now, enqueued_at = NULL \
        WHERE id IN (SELECT value FROM json_each($ids)) AND +status = 'pending'",
    ),
    delivery_handled: sql!(
        pipeline::DeliveryHandled,
        "UPDATE jadpo_deliveries SET status = 'handled', attempts = attempts + 1, \
        last_attempt_at = $now, finished_at = $now, enqueued_at = NULL \
        WHERE id = $id AND status = 'pending'",
    ),
    delivery_retry: sql!(
        pipeline::DeliveryRetry,
        "UPDATE jadpo_deliveries SET attempts = attempts + 1, last_attempt_at = $now, \
        last_failure = $failure, next_attempt_at = $retry_at, enqueued_at = NULL \
        WHERE id = $id AND status = 'pending'",
    ),
    delivery_defer: sql!(
        pipeline::DeliveryDefer,
        "UPDATE jadpo_deliveries SET last_failure = $reason, next_attempt_at = $until, enqueued_at = NULL \
        WHERE id = $id AND status = 'pending'",
    ),
    delivery_dead: sql!(
        pipeline::DeliveryDead,
        "UPDATE jadpo_deliveries SET status = 'dead', attempts = attempts + 1, \
        last_attempt_at = $now, last_failure = $failure, finished_at = $now, enqueued_at = NULL \
        WHERE id = $id AND status = 'pending'",
    ),
    deliveries_claim_due: sql!(
        pipeline::DeliveriesClaimDue,
        "UPDATE jadpo_deliveries SET enqueued_at = $now WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'pending' AND next_attempt_at <= $now \
        AND (enqueued_at IS NULL OR enqueued_at < $lost_before) ORDER BY next_attempt_at LIMIT $limit) \
        RETURNING id, (SELECT traceparent FROM jadpo_outbox o \
        WHERE o.id = jadpo_deliveries.outbox_id) AS traceparent",
    ),
    deliveries_count_sent_before: sql!(
        pipeline::DeliveriesCountSentBefore,
        "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'pending' AND enqueued_at < $lost_before",
    ),
    deliveries_mark_enqueued: sql!(
        pipeline::DeliveriesMarkEnqueued,
        "UPDATE jadpo_deliveries SET enqueued_at = $now WHERE id IN (SELECT value FROM json_each($ids)) \
        AND +status = 'pending' AND attempts = 0 AND enqueued_at IS NULL",
    ),
    deliveries_unmark_enqueued: sql!(
        pipeline::DeliveriesUnmarkEnqueued,
        "UPDATE jadpo_deliveries SET enqueued_at = NULL \
        WHERE id IN (SELECT value FROM json_each($ids)) AND +status = 'pending'",
    ),
    deliveries_list: sql!(
        pipeline::DeliveriesList,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE ($status IS NULL OR d.status = $status) AND ($subscriber IS NULL OR d.subscriber = $subscriber) \
        ORDER BY d.created_at DESC, d.id DESC LIMIT $limit"
        )
    ),
    handled_insert: sql!(
        pipeline::HandledInsert,
        "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
        VALUES ($delivery_id, $subscriber, $now) ON CONFLICT (delivery_id) DO NOTHING",
    ),
    // `WHERE true` tells SQLite's parser the ON CONFLICT belongs to the INSERT, not a join.
    handled_insert_many: sql!(
        pipeline::HandledInsertMany,
        "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
        SELECT json_extract(value, '$.id'), json_extract(value, '$.subscriber'), $now \
        FROM json_each($handled) WHERE true ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id",
    ),
    idempotency_delete_expired: sql!(
        pipeline::IdempotencyDeleteExpired,
        "DELETE FROM jadpo_idempotency_keys \
        WHERE scope = $scope AND key = $key AND expires_at <= $now",
    ),
    idempotency_insert: sql!(
        pipeline::IdempotencyInsert,
        "INSERT INTO jadpo_idempotency_keys (scope, key, request_digest, \
        response_status, response_body, created_at, expires_at) VALUES ($scope, $key, $digest, 0, '', $now, $expires_at) \
        ON CONFLICT (scope, key) DO NOTHING",
    ),
    // In process, the three statements cost no round trips: the role runs them in order.
    idempotency_claim: None,
    idempotency_select: sql!(
        pipeline::IdempotencySelect,
        "SELECT request_digest, response_status, response_body \
        FROM jadpo_idempotency_keys WHERE scope = $scope AND key = $key",
    ),
    idempotency_store: sql!(
        pipeline::IdempotencyStore,
        "UPDATE jadpo_idempotency_keys SET response_status = $status, response_body = $body \
        WHERE scope = $scope AND key = $key",
    ),
};
