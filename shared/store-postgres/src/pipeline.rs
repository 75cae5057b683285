//! The pipeline's statements in PostgreSQL's dialect. Claiming due deliveries locks the rows it
//! takes and skips rows another relay holds (`FOR UPDATE SKIP LOCKED`), so concurrent relays
//! never claim the same delivery.

use jadpo_store_sql::tables::pipeline;
use jadpo_store_sql::{PipelineSql, sql};

pub(crate) const DELIVERY_COLUMNS: &str = "d.id, d.subscriber, d.status, d.attempts, d.next_attempt_at, \
    d.enqueued_at, d.last_attempt_at, d.last_failure, d.finished_at, d.created_at, \
    o.id AS outbox_id, o.event_type, o.payload, o.chain_depth, o.created_at AS event_created_at, \
    o.encoding AS payload_encoding, o.traceparent, o.tracestate, d.held_connection, d.held_at";

/// PostgreSQL's pipeline statements.
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
        created_at) SELECT d->>'id', $outbox_id::text, d->>'subscriber', $created_at::timestamptz, $created_at::timestamptz \
        FROM jsonb_array_elements($deliveries::jsonb) AS d",
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
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = ANY(ARRAY(SELECT jsonb_array_elements_text($ids::jsonb)))"
        )
    ),
    deliveries_handled: sql!(
        pipeline::DeliveriesHandled,
        "UPDATE jadpo_deliveries SET status = 'handled', attempts = attempts + 1, \
        last_attempt_at = $now, finished_at = $now, enqueued_at = NULL \
        WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($ids::jsonb))) AND status = 'pending'",
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
        AND (enqueued_at IS NULL OR enqueued_at < $lost_before) ORDER BY next_attempt_at LIMIT $limit \
        FOR UPDATE SKIP LOCKED) \
        RETURNING id, (SELECT traceparent FROM jadpo_outbox o \
        WHERE o.id = jadpo_deliveries.outbox_id) AS traceparent",
    ),
    // `= ANY(ARRAY(...))` lets the planner probe the primary key even before statistics exist.
    deliveries_count_sent_before: sql!(
        pipeline::DeliveriesCountSentBefore,
        "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'pending' AND enqueued_at < $lost_before",
    ),
    // A mark is advice to the relay: one lost in a server crash costs a re-sent message, which
    // the handled record deduplicates. Its commit does not wait for the WAL flush
    // (`synchronous_commit` off for this statement's own transaction only), which halves the
    // flushes of a commit that is sent at once.
    deliveries_mark_enqueued: sql!(
        pipeline::DeliveriesMarkEnqueued,
        "UPDATE jadpo_deliveries SET enqueued_at = $now \
        FROM (SELECT set_config('synchronous_commit', 'off', true)) AS advisory \
        WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($ids::jsonb))) \
        AND status = 'pending' AND attempts = 0 AND enqueued_at IS NULL",
    ),
    deliveries_unmark_enqueued: sql!(
        pipeline::DeliveriesUnmarkEnqueued,
        "UPDATE jadpo_deliveries SET enqueued_at = NULL \
        WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($ids::jsonb))) AND status = 'pending'",
    ),
    deliveries_list: sql!(
        pipeline::DeliveriesList,
        const_format::concatcp!(
            "SELECT ",
            DELIVERY_COLUMNS,
            " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE ($status::text IS NULL OR d.status = $status) AND ($subscriber::text IS NULL OR d.subscriber = $subscriber) \
        ORDER BY d.created_at DESC, d.id DESC LIMIT $limit"
        )
    ),
    handled_insert: sql!(
        pipeline::HandledInsert,
        "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
        VALUES ($delivery_id, $subscriber, $now) ON CONFLICT (delivery_id) DO NOTHING",
    ),
    handled_insert_many: sql!(
        pipeline::HandledInsertMany,
        "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
        SELECT d->>'id', d->>'subscriber', $now::timestamptz FROM jsonb_array_elements($handled::jsonb) AS d \
        ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id",
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
    idempotency_claim: Some(sql!(
        pipeline::IdempotencyInsert,
        "INSERT INTO jadpo_idempotency_keys AS k (scope, key, request_digest, response_status, \
        response_body, created_at, expires_at) VALUES ($scope, $key, $digest, 0, '', $now, $expires_at) \
        ON CONFLICT (scope, key) DO UPDATE SET request_digest = EXCLUDED.request_digest, \
        response_status = 0, response_body = '', created_at = EXCLUDED.created_at, \
        expires_at = EXCLUDED.expires_at WHERE k.expires_at <= $now RETURNING 1 AS claimed",
    )),
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
