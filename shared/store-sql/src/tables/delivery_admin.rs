//! `DeliveryAdminSql`: the slots of the delivery admin role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for operator changes to deliveries.
    pub struct DeliveryAdminSql {
        /// Returns the delivery joined with its event (the columns a delivery is read from), locked for
        /// the transaction where the dialect can.
        get_locked(id),
        /// Pending or dead → pending, attempts 0, due now, not held.
        retry(id, now),
        /// Pending or dead → discarded.
        discard(id, now, why),
        /// A page of deliveries of any status, joined with their events, newest first:
        /// `subscriber`, `event_type` and `held` (the connection whose breaker holds it) match
        /// when `NULL`; created at or after `from`, and before (`before_at`, `before_id`).
        page_all(subscriber, event_type, held, from, before_at, before_id, limit),
        /// The same for one status.
        page_status(status, subscriber, event_type, held, from, before_at, before_id, limit),
        /// `n`: how many deliveries have `status`, counting no further than `cap` (ordered as
        /// the `(status, created_at, id)` index, so even a generic plan reads only that).
        count_status(status, cap),
        /// `n`: how many dead deliveries finished at or after `since`, no further than `cap`.
        count_dead_since(since, cap),
        /// `oldest`: the oldest pending delivery's `created_at` (`NULL` without one).
        oldest_pending(),
        /// Run first in the transaction of an operator's page (empty: the dialect needs
        /// nothing): have each statement planned for its own parameters. A status's rows range
        /// from none to nearly all, and a plan made once for any status (PostgreSQL's generic
        /// plan of a cached statement) may walk a whole table for a status that has none.
        custom_plans(),
        /// `subscriber`, `last_failure`, `n`, `newest`: the newest `window` dead deliveries
        /// grouped, at most `limit` groups.
        dead_groups(limit, window),
    }
}
