//! Schedule statements (SQLite): `jadpo_schedules`, `jadpo_schedule_runs` and the
//! operator-action log.

use jadpo_store_sql::{ScheduleSql, Statement};

const SCHEDULE: &str = "SELECT name, expression, event_type, next_due_at, last_tick_at, \
    last_run_id, paused_at, removed_at, lease_owner, lease_expires_at FROM jadpo_schedules";

/// The schedule statements.
pub(crate) static SCHEDULES: ScheduleSql = ScheduleSql {
    list: Statement::new(const_format::concatcp!(SCHEDULE, " ORDER BY name")),
    get: Statement::new(const_format::concatcp!(SCHEDULE, " WHERE name = $1")),
    insert: Statement::new(
        "INSERT INTO jadpo_schedules (name, expression, event_type, next_due_at, created_at, \
        updated_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (name) DO NOTHING",
    ),
    redeclare: Statement::new(
        "UPDATE jadpo_schedules SET expression = $2, event_type = $3, updated_at = $4 \
        WHERE name = $1 AND (expression <> $2 OR event_type <> $3)",
    ),
    restore: Statement::new(
        "UPDATE jadpo_schedules SET removed_at = NULL, next_due_at = $2, updated_at = $3 \
        WHERE name = $1 AND removed_at IS NOT NULL",
    ),
    mark_removed: Statement::new(
        "UPDATE jadpo_schedules SET removed_at = $2, updated_at = $2 \
        WHERE removed_at IS NULL \
        AND name NOT IN (SELECT value FROM json_each($1))",
    ),
    due: Statement::new(
        "SELECT name FROM jadpo_schedules WHERE removed_at IS NULL AND next_due_at <= $1 \
        ORDER BY next_due_at, name LIMIT $2",
    ),
    run_insert: Statement::new(
        "INSERT INTO jadpo_schedule_runs (id, schedule, tick_at, status, trigger, reason, \
        outbox_id, recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
    ),
    advance: Statement::new(
        "UPDATE jadpo_schedules SET next_due_at = $2, last_tick_at = $3, \
        last_run_id = COALESCE($4, last_run_id), overdue_alert_raised_at = NULL, \
        updated_at = $5 WHERE name = $1",
    ),
    set_last_run: Statement::new(
        "UPDATE jadpo_schedules SET last_run_id = $2, updated_at = $3 WHERE name = $1",
    ),
    unfinished: Statement::new(
        "SELECT COUNT(d.id) AS unfinished FROM jadpo_schedule_runs r \
        JOIN jadpo_deliveries d ON d.outbox_id = r.outbox_id \
        WHERE r.id = $1 AND d.status = 'pending'",
    ),
    set_paused: Statement::new(
        "UPDATE jadpo_schedules SET paused_at = $2, updated_at = $3 \
        WHERE name = $1",
    ),
    runs: Statement::new(
        "SELECT id, schedule, tick_at, status, trigger, reason, outbox_id, recorded_at \
        FROM jadpo_schedule_runs WHERE ($1 IS NULL OR schedule = $1) \
        ORDER BY tick_at DESC, recorded_at DESC, id DESC LIMIT $2",
    ),
    // SQLite has no database roles; the file's access is the OS user's.
    current_role: Statement::new("SELECT 'none (sqlite)' AS role"),
    action_insert: Statement::new(
        "INSERT INTO jadpo_operator_actions (id, acted_at, action, item_kind, item, \
        item_state, operator, db_role, detail, os_account) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    ),
    actions: Statement::new(
        "SELECT id, acted_at, action, item_kind, item, item_state, operator, db_role, detail, \
        os_account \
        FROM jadpo_operator_actions WHERE ($1 IS NULL OR item_kind = $1) \
        AND ($2 IS NULL OR item = $2) AND ($3 IS NULL OR operator = $3) \
        AND ($4 IS NULL OR acted_at >= $4) ORDER BY acted_at DESC, id DESC LIMIT $5",
    ),
};
