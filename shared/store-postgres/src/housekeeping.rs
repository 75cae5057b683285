//! Housekeeping statements (PostgreSQL). Each batch is picked in a subquery with `FOR UPDATE SKIP LOCKED`, so it never waits on a row a
//! writer holds.

use jadpo_store_sql::tables::housekeeping;
use jadpo_store_sql::{HousekeepingSql, sql};

/// The housekeeping statements.
pub(crate) static HOUSEKEEPING: HousekeepingSql = HousekeepingSql {
    delete_idempotency_keys: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_idempotency_keys WHERE (scope, key) IN ( \
        SELECT scope, key FROM jadpo_idempotency_keys WHERE expires_at <= $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_handled: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_handled_deliveries WHERE delivery_id IN ( \
        SELECT delivery_id FROM jadpo_handled_deliveries WHERE handled_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_finished: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_deliveries WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE finished_at < $cutoff \
        AND status IN ('handled', 'discarded') LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_dead: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_deliveries WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE finished_at < $cutoff AND status = 'dead' \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_outbox: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_outbox WHERE id IN ( \
        SELECT o.id FROM jadpo_outbox o WHERE o.created_at < $cutoff \
        AND NOT EXISTS (SELECT 1 FROM jadpo_deliveries d WHERE d.outbox_id = o.id) \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_schedule_runs: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_schedule_runs WHERE id IN ( \
        SELECT id FROM jadpo_schedule_runs WHERE recorded_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_user_sessions: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_sessions WHERE id IN ( \
        SELECT id FROM jadpo_sessions WHERE ended_at < $cutoff OR expires_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_sign_in_requests: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_sign_in_requests WHERE address_digest IN ( \
        SELECT address_digest FROM jadpo_sign_in_requests \
        WHERE expires_at < $cutoff AND window_started_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_passkey_challenges: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_passkey_challenges WHERE challenge_verifier IN ( \
        SELECT challenge_verifier FROM jadpo_passkey_challenges WHERE expires_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_sign_in_sources: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_sign_in_sources WHERE source_digest IN ( \
        SELECT source_digest FROM jadpo_sign_in_sources WHERE window_started_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    delete_used_tokens: sql!(
        housekeeping::DeleteOlder,
        "DELETE FROM jadpo_used_tokens WHERE token_digest IN ( \
        SELECT token_digest FROM jadpo_used_tokens WHERE expires_at < $cutoff LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    rescue: sql!(
        housekeeping::Rescue,
        "UPDATE jadpo_deliveries SET enqueued_at = NULL WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'pending' AND enqueued_at < $enqueued_before \
        LIMIT $limit FOR UPDATE SKIP LOCKED)",
    ),
    dead_alerts: sql!(
        housekeeping::DeadAlerts,
        "UPDATE jadpo_deliveries SET alert_raised_at = $now WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'dead' AND alert_raised_at IS NULL \
        LIMIT $limit FOR UPDATE SKIP LOCKED) RETURNING id, subscriber, last_failure",
    ),
    overdue_alerts: sql!(
        housekeeping::OverdueAlerts,
        "UPDATE jadpo_schedules SET overdue_alert_raised_at = $now WHERE name IN ( \
        SELECT name FROM jadpo_schedules WHERE removed_at IS NULL AND paused_at IS NULL \
        AND overdue_alert_raised_at IS NULL AND next_due_at < $due_before \
        LIMIT $limit FOR UPDATE SKIP LOCKED) RETURNING name, next_due_at",
    ),
    complete: sql!(
        housekeeping::Complete,
        "UPDATE jadpo_housekeeping SET last_completed_at = $now WHERE name = $name",
    ),
};
