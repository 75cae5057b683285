//! Schedule, housekeeping and circuit-breaker and flag statements (SQLite). One writer at a time, so a batch
//! is simply limited in size; each is its own short transaction.

use jadpo_core::dialect::{BreakerDialect, BreakerSql};
use jadpo_core::dialect::{FlagDialect, FlagSql};
use jadpo_core::dialect::{HousekeepingDialect, HousekeepingSql};
use jadpo_core::dialect::{ScheduleDialect, ScheduleSql};

use crate::SqliteStore;

const SCHEDULE: &str = "SELECT name, expression, event_type, next_due_at, last_tick_at, \
    last_run_id, paused_at, removed_at, lease_owner, lease_expires_at FROM jadpo_schedules";

/// The schedule statements.
pub static SCHEDULES: ScheduleSql = ScheduleSql {
    list: const_format::concatcp!(SCHEDULE, " ORDER BY name"),
    get: const_format::concatcp!(SCHEDULE, " WHERE name = $1"),
    insert: "INSERT INTO jadpo_schedules (name, expression, event_type, next_due_at, created_at, \
        updated_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (name) DO NOTHING",
    redeclare: "UPDATE jadpo_schedules SET expression = $2, event_type = $3, updated_at = $4 \
        WHERE name = $1 AND (expression <> $2 OR event_type <> $3)",
    restore: "UPDATE jadpo_schedules SET removed_at = NULL, next_due_at = $2, updated_at = $3 \
        WHERE name = $1 AND removed_at IS NOT NULL",
    mark_removed: "UPDATE jadpo_schedules SET removed_at = $2, updated_at = $2 \
        WHERE removed_at IS NULL \
        AND name NOT IN (SELECT value FROM json_each($1))",
    due: "SELECT name FROM jadpo_schedules WHERE removed_at IS NULL AND next_due_at <= $1 \
        ORDER BY next_due_at, name LIMIT $2",
    run_insert: "INSERT INTO jadpo_schedule_runs (id, schedule, tick_at, status, trigger, reason, \
        outbox_id, recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
    advance: "UPDATE jadpo_schedules SET next_due_at = $2, last_tick_at = $3, \
        last_run_id = COALESCE($4, last_run_id), overdue_alert_raised_at = NULL, \
        updated_at = $5 WHERE name = $1",
    set_last_run: "UPDATE jadpo_schedules SET last_run_id = $2, updated_at = $3 WHERE name = $1",
    unfinished: "SELECT COUNT(d.id) AS unfinished FROM jadpo_schedule_runs r \
        JOIN jadpo_deliveries d ON d.outbox_id = r.outbox_id \
        WHERE r.id = $1 AND d.status = 'pending'",
    set_paused: "UPDATE jadpo_schedules SET paused_at = $2, updated_at = $3 \
        WHERE name = $1",
    runs: "SELECT id, schedule, tick_at, status, trigger, reason, outbox_id, recorded_at \
        FROM jadpo_schedule_runs WHERE ($1 IS NULL OR schedule = $1) \
        ORDER BY tick_at DESC, recorded_at DESC, id DESC LIMIT $2",
    // SQLite has no database roles; the file's access is the OS user's.
    current_role: "SELECT 'none (sqlite)' AS role",
    action_insert: "INSERT INTO jadpo_operator_actions (id, acted_at, action, item_kind, item, \
        item_state, operator, db_role, detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    actions: "SELECT id, acted_at, action, item_kind, item, item_state, operator, db_role, detail \
        FROM jadpo_operator_actions WHERE ($1 IS NULL OR item_kind = $1) \
        AND ($2 IS NULL OR item = $2) ORDER BY acted_at DESC, id DESC LIMIT $3",
};

/// The housekeeping statements.
pub static HOUSEKEEPING: HousekeepingSql = HousekeepingSql {
    delete_idempotency_keys: "DELETE FROM jadpo_idempotency_keys WHERE (scope, key) IN ( \
        SELECT scope, key FROM jadpo_idempotency_keys WHERE expires_at <= $1 \
        LIMIT $2)",
    delete_handled: "DELETE FROM jadpo_handled_deliveries WHERE delivery_id IN ( \
        SELECT delivery_id FROM jadpo_handled_deliveries WHERE handled_at < $1 \
        LIMIT $2)",
    delete_finished: "DELETE FROM jadpo_deliveries WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE finished_at < $1 \
        AND status IN ('handled', 'discarded') LIMIT $2)",
    delete_dead: "DELETE FROM jadpo_deliveries WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE finished_at < $1 AND status = 'dead' \
        LIMIT $2)",
    delete_outbox: "DELETE FROM jadpo_outbox WHERE id IN ( \
        SELECT o.id FROM jadpo_outbox o WHERE o.created_at < $1 \
        AND NOT EXISTS (SELECT 1 FROM jadpo_deliveries d WHERE d.outbox_id = o.id) \
        LIMIT $2)",
    delete_schedule_runs: "DELETE FROM jadpo_schedule_runs WHERE id IN ( \
        SELECT id FROM jadpo_schedule_runs WHERE recorded_at < $1 \
        LIMIT $2)",
    rescue: "UPDATE jadpo_deliveries SET enqueued_at = NULL WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'pending' AND enqueued_at < $1 \
        LIMIT $2)",
    dead_alerts: "UPDATE jadpo_deliveries SET alert_raised_at = $1 WHERE id IN ( \
        SELECT id FROM jadpo_deliveries WHERE status = 'dead' AND alert_raised_at IS NULL \
        LIMIT $2) RETURNING id, subscriber, last_failure",
    overdue_alerts: "UPDATE jadpo_schedules SET overdue_alert_raised_at = $1 WHERE name IN ( \
        SELECT name FROM jadpo_schedules WHERE removed_at IS NULL AND paused_at IS NULL \
        AND overdue_alert_raised_at IS NULL AND next_due_at < $2 \
        LIMIT $3) RETURNING name, next_due_at",
    complete: "UPDATE jadpo_housekeeping SET last_completed_at = $2 WHERE name = $1",
};

impl ScheduleDialect for SqliteStore {
    fn schedule_sql(&self) -> &'static ScheduleSql {
        &SCHEDULES
    }
}

impl HousekeepingDialect for SqliteStore {
    fn housekeeping_sql(&self) -> &'static HousekeepingSql {
        &HOUSEKEEPING
    }
}

const BREAKER: &str = "SELECT connection, state, failures, opened_at, pause_ms, reopen_at, \
    probe_delivery, probe_started_at, alert_at, alert_raised_at FROM jadpo_circuit_breakers";

/// The circuit-breaker statements. SQLite's single writer (`BEGIN IMMEDIATE`) serializes the
/// transactions that decide, so two delivery functions cannot both take the probe.
pub static BREAKERS: BreakerSql = BreakerSql {
    ensure: "INSERT INTO jadpo_circuit_breakers (connection, updated_at) VALUES ($1, $2) \
        ON CONFLICT (connection) DO NOTHING",
    lock: const_format::concatcp!(BREAKER, " WHERE connection = $1"),
    write: "UPDATE jadpo_circuit_breakers SET state = $2, failures = $3, opened_at = $4, \
        pause_ms = $5, reopen_at = $6, probe_delivery = $7, probe_started_at = $8, alert_at = $9, \
        alert_raised_at = $10, updated_at = $11 WHERE connection = $1",
    hold: "UPDATE jadpo_deliveries SET held_connection = $2, held_at = $3, next_attempt_at = $4, \
        enqueued_at = NULL WHERE id = $1 AND status = 'pending'",
    unhold: "UPDATE jadpo_deliveries SET held_connection = NULL, held_at = NULL WHERE id = $1",
    release: "UPDATE jadpo_deliveries SET held_connection = NULL, held_at = NULL, \
        next_attempt_at = $2, enqueued_at = NULL WHERE held_connection = $1 AND status = 'pending'",
    list: const_format::concatcp!(BREAKER, " ORDER BY connection"),
    alerts: "UPDATE jadpo_circuit_breakers SET alert_raised_at = $1 WHERE connection IN ( \
        SELECT connection FROM jadpo_circuit_breakers WHERE state <> 'closed' \
        AND alert_raised_at IS NULL AND alert_at <= $1 LIMIT $2) \
        RETURNING connection, opened_at",
};

impl BreakerDialect for SqliteStore {
    fn breaker_sql(&self) -> &'static BreakerSql {
        &BREAKERS
    }
}

const FLAG: &str = "SELECT name, mode, percentage, updated_at, updated_by FROM jadpo_flags";

/// The flag statements.
pub static FLAGS: FlagSql = FlagSql {
    get: const_format::concatcp!(FLAG, " WHERE name = $1"),
    list: const_format::concatcp!(FLAG, " ORDER BY name"),
    upsert: "INSERT INTO jadpo_flags (name, mode, percentage, updated_at, updated_by) \
        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET mode = excluded.mode, \
        percentage = excluded.percentage, updated_at = excluded.updated_at, \
        updated_by = excluded.updated_by",
    change_insert: "INSERT INTO jadpo_flag_changes (id, flag, changed_at, before, after, \
        operator, db_role) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    changes: "SELECT id, flag, changed_at, before, after, operator, db_role \
        FROM jadpo_flag_changes WHERE flag = $1 ORDER BY changed_at DESC, id DESC LIMIT $2",
};

impl FlagDialect for SqliteStore {
    fn flag_sql(&self) -> &'static FlagSql {
        &FLAGS
    }
}
