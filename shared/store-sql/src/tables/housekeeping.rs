//! `HousekeepingSql`: the slots of the housekeeping role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's housekeeping statements. Each deletes or updates at most `limit` rows, picking
    /// them in a subquery (PostgreSQL skips rows a writer holds, so a batch never waits on one).
    pub struct HousekeepingSql {
        /// Expired idempotency keys.
        delete_idempotency_keys(now, limit),
        /// Handled-delivery records handled before `cutoff`.
        delete_handled(cutoff, limit),
        /// Handled or discarded deliveries finished before `cutoff`.
        delete_finished(cutoff, limit),
        /// Dead deliveries dead before `cutoff`.
        delete_dead(cutoff, limit),
        /// Outbox rows created before `cutoff` with no delivery left.
        delete_outbox(cutoff, limit),
        /// Schedule runs recorded before `cutoff`.
        delete_schedule_runs(cutoff, limit),
        /// Users' sessions ended before `cutoff` or whose end is before it.
        delete_user_sessions(cutoff, limit),
        /// Sign-in requests whose link and send window are both over.
        delete_sign_in_requests(cutoff, limit),
        /// Passkey ceremonies past their end.
        delete_passkey_challenges(cutoff, limit),
        /// Sign-in sources whose window started before `cutoff`.
        delete_sign_in_sources(cutoff, limit),
        /// Used ID tokens that expired before `cutoff`.
        delete_used_tokens(cutoff, limit),
        /// Clear the queue stamp of pending deliveries put on the queue before `enqueued_before`, so
        /// the relay sends them again.
        rescue(enqueued_before, limit),
        /// Returns `id, subscriber, last_failure`: dead deliveries whose alert is not raised, marking
        /// it raised.
        dead_alerts(now, limit),
        /// Returns `name, next_due_at`: active schedules due before `due_before` whose alert is not
        /// raised, marking it raised.
        overdue_alerts(now, due_before, limit),
        /// The pass completed.
        complete(name, now),
    }
}
