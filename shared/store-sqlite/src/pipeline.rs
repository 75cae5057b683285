//! The pipeline's statements in SQLite's dialect. One writer at a time, so claiming due
//! deliveries needs no row locks.
//!
//! A statement that addresses deliveries by a list of ids writes `+status`: the unary plus keeps
//! SQLite's planner off the `(status, next_attempt_at)` index, which it otherwise prefers for
//! `status = 'pending'` — a walk over every pending delivery, per statement, that grows with the
//! backlog (`tests/plans.rs` holds every such statement to the primary key).

use jadpo_store_sql::{PipelineSql, Statement};

pub(crate) const DELIVERY_COLUMNS: &str = "d.id, d.subscriber, d.status, d.attempts, d.next_attempt_at, \
    d.enqueued_at, d.last_attempt_at, d.last_failure, d.finished_at, d.created_at, \
    o.id AS outbox_id, o.event_type, o.payload, o.chain_depth, o.created_at AS event_created_at, \
    o.encoding AS payload_encoding, o.traceparent, o.tracestate, d.held_connection, d.held_at";

/// SQLite's pipeline statements.
pub(crate) static SQL: PipelineSql = PipelineSql {
    outbox_insert: Statement::new(
        "INSERT INTO jadpo_outbox (id, event_type, payload, encoding, traceparent, \
        tracestate, chain_depth, source, request_id, created_at) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    ),
    deliveries_insert: Statement::new(
        "INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, next_attempt_at, \
        created_at) SELECT json_extract(value, '$.id'), $1, json_extract(value, '$.subscriber'), $2, $2 \
        FROM json_each($3)",
    ),
    delivery_get: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = $1"
    )),
    deliveries_get: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id IN (SELECT value FROM json_each($1))"
    )),
    deliveries_handled: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'handled', attempts = attempts + 1, \
        last_attempt_at = $2, finished_at = $2, enqueued_at = NULL \
        WHERE id IN (SELECT value FROM json_each($1)) AND +status = 'pending'",
    ),
    delivery_handled: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'handled', attempts = attempts + 1, \
        last_attempt_at = $2, finished_at = $2, enqueued_at = NULL \
        WHERE id = $1 AND status = 'pending'",
    ),
    delivery_retry: Statement::new(
        "UPDATE jadpo_deliveries SET attempts = attempts + 1, last_attempt_at = $2, \
        last_failure = $3, next_attempt_at = $4, enqueued_at = NULL \
        WHERE id = $1 AND status = 'pending'",
    ),
    delivery_defer: Statement::new(
        "UPDATE jadpo_deliveries SET last_failure = $2, next_attempt_at = $3, enqueued_at = NULL \
        WHERE id = $1 AND status = 'pending'",
    ),
    delivery_dead: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'dead', attempts = attempts + 1, \
        last_attempt_at = $2, last_failure = $3, finished_at = $2, enqueued_at = NULL \
        WHERE id = $1 AND status = 'pending'",
    ),
    deliveries_claim_due: Statement::new(
        "UPDATE jadpo_deliveries SET enqueued_at = $1 WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 \
        AND (enqueued_at IS NULL OR enqueued_at < $2) ORDER BY next_attempt_at LIMIT $3) \
        RETURNING id, (SELECT traceparent FROM jadpo_outbox o \
        WHERE o.id = jadpo_deliveries.outbox_id) AS traceparent",
    ),
    deliveries_count_sent_before: Statement::new(
        "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'pending' AND enqueued_at < $1",
    ),
    deliveries_mark_enqueued: Statement::new(
        "UPDATE jadpo_deliveries SET enqueued_at = $2 WHERE id IN (SELECT value FROM json_each($1)) \
        AND +status = 'pending' AND attempts = 0 AND enqueued_at IS NULL",
    ),
    deliveries_unmark_enqueued: Statement::new(
        "UPDATE jadpo_deliveries SET enqueued_at = NULL \
        WHERE id IN (SELECT value FROM json_each($1)) AND +status = 'pending'",
    ),
    deliveries_list: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE ($1 IS NULL OR d.status = $1) AND ($2 IS NULL OR d.subscriber = $2) \
        ORDER BY d.created_at DESC, d.id DESC LIMIT $3"
    )),
    handled_insert: Statement::new(
        "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
        VALUES ($1, $2, $3) ON CONFLICT (delivery_id) DO NOTHING",
    ),
    // `WHERE true` tells SQLite's parser the ON CONFLICT belongs to the INSERT, not a join.
    handled_insert_many: Statement::new(
        "INSERT INTO jadpo_handled_deliveries (delivery_id, subscriber, handled_at) \
        SELECT json_extract(value, '$.id'), json_extract(value, '$.subscriber'), $2 \
        FROM json_each($1) WHERE true ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id",
    ),
    idempotency_delete_expired: Statement::new(
        "DELETE FROM jadpo_idempotency_keys \
        WHERE scope = $1 AND key = $2 AND expires_at <= $3",
    ),
    idempotency_insert: Statement::new(
        "INSERT INTO jadpo_idempotency_keys (scope, key, request_digest, \
        response_status, response_body, created_at, expires_at) VALUES ($1, $2, $3, 0, '', $4, $5) \
        ON CONFLICT (scope, key) DO NOTHING",
    ),
    idempotency_select: Statement::new(
        "SELECT request_digest, response_status, response_body \
        FROM jadpo_idempotency_keys WHERE scope = $1 AND key = $2",
    ),
    idempotency_store: Statement::new(
        "UPDATE jadpo_idempotency_keys SET response_status = $3, response_body = $4 \
        WHERE scope = $1 AND key = $2",
    ),
};
