//! `ScheduleSql`: the slots of the schedule role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_schedules`, `jadpo_schedule_runs` and
    /// `jadpo_operator_actions`. Parameters are documented per field.
    pub struct ScheduleSql {
        /// Returns every schedule ([`ScheduleRow`]'s columns), by name.
        list(),
        /// Returns one schedule.
        get(name),
        /// A newly declared schedule, inserting nothing on conflict.
        insert(name, expression, event_type, next_due_at, now),
        /// A changed declaration; the next due time stays.
        redeclare(name, expression, event_type, now),
        /// A removed schedule declared again.
        restore(name, next_due_at, now),
        /// `names` a JSON array of the declared names: mark the others removed.
        mark_removed(names, now),
        /// Returns `name` of active or paused schedules due at `now`, the oldest first.
        due(now, limit),
        /// One run of a schedule, inserting nothing on conflict.
        run_insert(id, schedule, tick_at, status, trigger, reason, outbox_id, now),
        /// ; clears the overdue alert.
        advance(name, next_due_at, last_tick_at, last_run_id, now),
        /// Record an operator's run as the last run.
        set_last_run(name, last_run_id, now),
        /// Returns `unfinished`: the run's pending deliveries.
        unfinished(run_id),
        /// `paused_at` NULL resumes.
        set_paused(name, paused_at, now),
        /// Returns runs, newest first ([`ScheduleRun`]'s columns).
        runs(schedule, limit),
        /// Returns `role`: the database role in use.
        current_role(),
        /// One operator action, for the log.
        action_insert(
            id, acted_at, action, item_kind, item, item_state, operator, db_role, detail,
            os_account
        ),
        /// Returns operator actions, newest first.
        actions(item_kind, item, operator, since, limit),
    }
}
