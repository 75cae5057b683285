//! `ScheduleSql`: the slots of the schedule role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_schedules`, `jadpo_schedule_runs` and
    /// `jadpo_operator_actions`. Parameters are documented per field.
    pub struct ScheduleSql {
        /// Returns every schedule ([`ScheduleRow`]'s columns), by name.
        list: List(),
        /// Returns one schedule.
        get: Get(name: String),
        /// A newly declared schedule, inserting nothing on conflict.
        insert: Insert(
            name: String,
            expression: String,
            event_type: String,
            next_due_at: DateTime<Utc>,
            now: DateTime<Utc>,
        ),
        /// A changed declaration; the next due time stays.
        redeclare: Redeclare(
            name: String,
            expression: String,
            event_type: String,
            now: DateTime<Utc>,
        ),
        /// A removed schedule declared again.
        restore: Restore(name: String, next_due_at: DateTime<Utc>, now: DateTime<Utc>),
        /// `names` a JSON array of the declared names: mark the others removed.
        mark_removed: MarkRemoved(names: serde_json::Value, now: DateTime<Utc>),
        /// Returns `name` of active or paused schedules due at `now`, the oldest first.
        due: Due(now: DateTime<Utc>, limit: i64),
        /// One run of a schedule, inserting nothing on conflict.
        run_insert: RunInsert(
            id: String,
            schedule: String,
            tick_at: DateTime<Utc>,
            status: String,
            trigger: String,
            reason: Option<String>,
            outbox_id: Option<String>,
            now: DateTime<Utc>,
        ),
        /// ; clears the overdue alert.
        advance: Advance(
            name: String,
            next_due_at: DateTime<Utc>,
            last_tick_at: DateTime<Utc>,
            last_run_id: Option<String>,
            now: DateTime<Utc>,
        ),
        /// Record an operator's run as the last run.
        set_last_run: SetLastRun(name: String, last_run_id: String, now: DateTime<Utc>),
        /// Returns `unfinished`: the run's pending deliveries.
        unfinished: Unfinished(run_id: String),
        /// `paused_at` NULL resumes.
        set_paused: SetPaused(name: String, paused_at: Option<DateTime<Utc>>, now: DateTime<Utc>),
        /// Returns runs, newest first ([`ScheduleRun`]'s columns).
        runs: Runs(schedule: Option<String>, limit: i64),
        /// Returns `role`: the database role in use.
        current_role: CurrentRole(),
        /// One operator action, for the log.
        action_insert: ActionInsert(
            id: String,
            acted_at: DateTime<Utc>,
            action: String,
            item_kind: String,
            item: String,
            item_state: String,
            operator: String,
            db_role: String,
            detail: Option<String>,
            os_account: Option<String>,
        ),
        /// Returns operator actions, newest first.
        actions: Actions(
            item_kind: Option<String>,
            item: Option<String>,
            operator: Option<String>,
            since: Option<DateTime<Utc>>,
            limit: i64,
        ),
    }
}
