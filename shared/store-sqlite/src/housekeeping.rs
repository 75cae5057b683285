//! Housekeeping statements (SQLite). One writer at a time, so a batch is simply limited in size;
//! each is its own short transaction.

use jadpo_store_sql::{HousekeepingSql, Statement};

/// The housekeeping statements.
pub(crate) static HOUSEKEEPING: HousekeepingSql = HousekeepingSql {
    delete_idempotency_keys: Statement::new(
        "DELETE FROM jadpo_idempotency_keys WHERE (scope, key) IN ( \
        SELECT scope, key FROM jadpo_idempotency_keys WHERE expires_at <= $1 \
        LIMIT $2)",
    ),
    delete_handled: Statement::new(
        "DELETE FROM jadpo_handled_deliveries WHERE delivery_id IN ( \
        SELECT delivery_id FROM jadpo_handled_deliveries WHERE handled_at < $1 \
        LIMIT $2)",
    ),
    delete_finished: Statement::new(
        "DELETE FROM jadpo_deliveries WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE finished_at < $1 \
        AND status IN ('handled', 'discarded') LIMIT $2)",
    ),
    delete_dead: Statement::new(
        "DELETE FROM jadpo_deliveries WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE finished_at < $1 AND status = 'dead' \
        LIMIT $2)",
    ),
    delete_outbox: Statement::new(
        "DELETE FROM jadpo_outbox WHERE id IN ( \
        SELECT o.id FROM jadpo_outbox o WHERE o.created_at < $1 \
        AND NOT EXISTS (SELECT 1 FROM jadpo_deliveries d WHERE d.outbox_id = o.id) \
        LIMIT $2)",
    ),
    delete_schedule_runs: Statement::new(
        "DELETE FROM jadpo_schedule_runs WHERE id IN ( \
        SELECT id FROM jadpo_schedule_runs WHERE recorded_at < $1 \
        LIMIT $2)",
    ),
    delete_user_sessions: Statement::new(
        "DELETE FROM jadpo_sessions WHERE id IN ( \
        SELECT id FROM jadpo_sessions WHERE ended_at < $1 OR expires_at < $1 \
        LIMIT $2)",
    ),
    delete_sign_in_requests: Statement::new(
        "DELETE FROM jadpo_sign_in_requests WHERE address_digest IN ( \
        SELECT address_digest FROM jadpo_sign_in_requests \
        WHERE expires_at < $1 AND window_started_at < $1 \
        LIMIT $2)",
    ),
    delete_passkey_challenges: Statement::new(
        "DELETE FROM jadpo_passkey_challenges WHERE challenge_verifier IN ( \
        SELECT challenge_verifier FROM jadpo_passkey_challenges WHERE expires_at < $1 \
        LIMIT $2)",
    ),
    delete_sign_in_sources: Statement::new(
        "DELETE FROM jadpo_sign_in_sources WHERE source_digest IN ( \
        SELECT source_digest FROM jadpo_sign_in_sources WHERE window_started_at < $1 \
        LIMIT $2)",
    ),
    delete_used_tokens: Statement::new(
        "DELETE FROM jadpo_used_tokens WHERE token_digest IN ( \
        SELECT token_digest FROM jadpo_used_tokens WHERE expires_at < $1 LIMIT $2)",
    ),
    rescue: Statement::new(
        "UPDATE jadpo_deliveries SET enqueued_at = NULL WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'pending' AND enqueued_at < $1 \
        LIMIT $2)",
    ),
    dead_alerts: Statement::new(
        "UPDATE jadpo_deliveries SET alert_raised_at = $1 WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'dead' AND alert_raised_at IS NULL \
        LIMIT $2) RETURNING id, subscriber, last_failure",
    ),
    overdue_alerts: Statement::new(
        "UPDATE jadpo_schedules SET overdue_alert_raised_at = $1 WHERE name IN ( \
        SELECT name FROM jadpo_schedules WHERE removed_at IS NULL AND paused_at IS NULL \
        AND overdue_alert_raised_at IS NULL AND next_due_at < $2 \
        LIMIT $3) RETURNING name, next_due_at",
    ),
    complete: Statement::new(
        "UPDATE jadpo_housekeeping SET last_completed_at = $2 WHERE name = $1",
    ),
};
