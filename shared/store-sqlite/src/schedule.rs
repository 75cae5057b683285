//! Schedule statements (SQLite): `jadpo_schedules`, `jadpo_schedule_runs` and the
//! operator-action log.

use jadpo_store_sql::tables::schedule;
use jadpo_store_sql::{ScheduleSql, sql};

const SCHEDULE: &str = "SELECT name, expression, event_type, next_due_at, last_tick_at, \
    last_run_id, paused_at, removed_at, lease_owner, lease_expires_at FROM jadpo_schedules";

/// The schedule statements.
pub(crate) static SCHEDULES: ScheduleSql = ScheduleSql {
    list: sql!(schedule::List, const_format::concatcp!(SCHEDULE, " ORDER BY name")),
    get: sql!(schedule::Get, const_format::concatcp!(SCHEDULE, " WHERE name = $name")),
    insert: sql!(
        schedule::Insert,
        "INSERT INTO jadpo_schedules (name, expression, event_type, next_due_at, created_at, \
        updated_at) VALUES ($name, $expression, $event_type, $next_due_at, $now, $now) ON CONFLICT (name) DO NOTHING",
    ),
    redeclare: sql!(
        schedule::Redeclare,
        "UPDATE jadpo_schedules SET expression = $expression, event_type = $event_type, updated_at = $now \
        WHERE name = $name AND (expression <> $expression OR event_type <> $event_type)",
    ),
    restore: sql!(
        schedule::Restore,
        "UPDATE jadpo_schedules SET removed_at = NULL, next_due_at = $next_due_at, updated_at = $now \
        WHERE name = $name AND removed_at IS NOT NULL",
    ),
    mark_removed: sql!(
        schedule::MarkRemoved,
        "UPDATE jadpo_schedules SET removed_at = $now, updated_at = $now \
        WHERE removed_at IS NULL \
        AND name NOT IN (SELECT value FROM json_each($names))",
    ),
    due: sql!(
        schedule::Due,
        "SELECT name FROM jadpo_schedules WHERE removed_at IS NULL AND next_due_at <= $now \
        ORDER BY next_due_at, name LIMIT $limit",
    ),
    run_insert: sql!(
        schedule::RunInsert,
        "INSERT INTO jadpo_schedule_runs (id, schedule, tick_at, status, trigger, reason, \
        outbox_id, recorded_at) VALUES ($id, $schedule, $tick_at, $status, $trigger, $reason, $outbox_id, $now) ON CONFLICT (id) DO NOTHING",
    ),
    advance: sql!(
        schedule::Advance,
        "UPDATE jadpo_schedules SET next_due_at = $next_due_at, last_tick_at = $last_tick_at, \
        last_run_id = COALESCE($last_run_id, last_run_id), overdue_alert_raised_at = NULL, \
        updated_at = $now WHERE name = $name",
    ),
    set_last_run: sql!(
        schedule::SetLastRun,
        "UPDATE jadpo_schedules SET last_run_id = $last_run_id, updated_at = $now WHERE name = $name",
    ),
    unfinished: sql!(
        schedule::Unfinished,
        "SELECT COUNT(d.id) AS unfinished FROM jadpo_schedule_runs r \
        JOIN jadpo_deliveries d ON d.outbox_id = r.outbox_id \
        WHERE r.id = $run_id AND d.status = 'pending'",
    ),
    set_paused: sql!(
        schedule::SetPaused,
        "UPDATE jadpo_schedules SET paused_at = $paused_at, updated_at = $now \
        WHERE name = $name",
    ),
    runs: sql!(
        schedule::Runs,
        "SELECT id, schedule, tick_at, status, trigger, reason, outbox_id, recorded_at \
        FROM jadpo_schedule_runs WHERE ($schedule IS NULL OR schedule = $schedule) \
        ORDER BY tick_at DESC, recorded_at DESC, id DESC LIMIT $limit",
    ),
    // SQLite has no database roles; the file's access is the OS user's.
    current_role: sql!(schedule::CurrentRole, "SELECT 'none (sqlite)' AS role"),
    action_insert: sql!(
        schedule::ActionInsert,
        "INSERT INTO jadpo_operator_actions (id, acted_at, action, item_kind, item, \
        item_state, operator, db_role, detail, os_account) \
        VALUES ($id, $acted_at, $action, $item_kind, $item, $item_state, $operator, $db_role, $detail, $os_account)",
    ),
    actions: sql!(
        schedule::Actions,
        "SELECT id, acted_at, action, item_kind, item, item_state, operator, db_role, detail, \
        os_account \
        FROM jadpo_operator_actions WHERE ($item_kind IS NULL OR item_kind = $item_kind) \
        AND ($item IS NULL OR item = $item) AND ($operator IS NULL OR operator = $operator) \
        AND ($since IS NULL OR acted_at >= $since) ORDER BY acted_at DESC, id DESC LIMIT $limit",
    ),
};
