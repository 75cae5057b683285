//! `HousekeepingSql`: the slots of the housekeeping role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's housekeeping statements. Each deletes or updates at most `limit` rows, picking
    /// them in a subquery (PostgreSQL skips rows a writer holds, so a batch never waits on one).
    pub struct HousekeepingSql {
        /// Idempotency keys expired at `cutoff` (the pass's now). The other deletions by age take
        /// the same parameters.
        delete_idempotency_keys: DeleteOlder(cutoff: DateTime<Utc>, limit: i64),
        /// Handled-delivery records handled before `cutoff`.
        delete_handled: DeleteOlder(..),
        /// Handled or discarded deliveries finished before `cutoff`.
        delete_finished: DeleteOlder(..),
        /// Dead deliveries dead before `cutoff`.
        delete_dead: DeleteOlder(..),
        /// Outbox rows created before `cutoff` with no delivery left.
        delete_outbox: DeleteOlder(..),
        /// Schedule runs recorded before `cutoff`.
        delete_schedule_runs: DeleteOlder(..),
        /// Users' sessions ended before `cutoff` or whose end is before it.
        delete_user_sessions: DeleteOlder(..),
        /// Sign-in requests whose link and send window are both over.
        delete_sign_in_requests: DeleteOlder(..),
        /// Passkey ceremonies past their end.
        delete_passkey_challenges: DeleteOlder(..),
        /// Sign-in sources whose window started before `cutoff`.
        delete_sign_in_sources: DeleteOlder(..),
        /// Used ID tokens that expired before `cutoff`.
        delete_used_tokens: DeleteOlder(..),
        /// Clear the queue stamp of pending deliveries put on the queue before `enqueued_before`, so
        /// the relay sends them again.
        rescue: Rescue(enqueued_before: DateTime<Utc>, limit: i64),
        /// Returns `id, subscriber, last_failure`: dead deliveries whose alert is not raised, marking
        /// it raised.
        dead_alerts: DeadAlerts(now: DateTime<Utc>, limit: i64),
        /// Returns `name, next_due_at`: active schedules due before `due_before` whose alert is not
        /// raised, marking it raised.
        overdue_alerts: OverdueAlerts(now: DateTime<Utc>, due_before: DateTime<Utc>, limit: i64),
        /// The pass completed.
        complete: Complete(name: String, now: DateTime<Utc>),
    }
}
