//! `DeliveryAdminSql`: the slots of the delivery admin role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for operator changes to deliveries.
    pub struct DeliveryAdminSql {
        /// Returns the delivery joined with its event (the columns a delivery is read from), locked for
        /// the transaction where the dialect can.
        get_locked: GetLocked(id: String),
        /// Pending or dead → pending, attempts 0, due now, not held.
        retry: Retry(id: String, now: DateTime<Utc>),
        /// Pending or dead → discarded.
        discard: Discard(id: String, now: DateTime<Utc>, why: String),
        /// A page of deliveries of any status, joined with their events, newest first:
        /// `subscriber`, `event_type` and `held` (the connection whose breaker holds it) match
        /// when `NULL`; created at or after `from`, and before (`before_at`, `before_id`).
        page_all: PageAll(
            subscriber: Option<String>,
            event_type: Option<String>,
            held: Option<String>,
            from: DateTime<Utc>,
            before_at: DateTime<Utc>,
            before_id: String,
            limit: i64,
        ),
        /// The same for one status.
        page_status: PageStatus(
            status: String,
            subscriber: Option<String>,
            event_type: Option<String>,
            held: Option<String>,
            from: DateTime<Utc>,
            before_at: DateTime<Utc>,
            before_id: String,
            limit: i64,
        ),
        /// `n`: how many deliveries have `status`, counting no further than `cap` (ordered as
        /// the `(status, created_at, id)` index, so even a generic plan reads only that).
        count_status: CountStatus(status: String, cap: i64),
        /// `n`: how many dead deliveries finished at or after `since`, no further than `cap`.
        count_dead_since: CountDeadSince(since: DateTime<Utc>, cap: i64),
        /// `oldest`: the oldest pending delivery's `created_at` (`NULL` without one).
        oldest_pending: OldestPending(),
        /// Run first in the transaction of an operator's page (empty: the dialect needs
        /// nothing): have each statement planned for its own parameters. A status's rows range
        /// from none to nearly all, and a plan made once for any status (PostgreSQL's generic
        /// plan of a cached statement) may walk a whole table for a status that has none.
        custom_plans: CustomPlans(),
        /// `subscriber`, `last_failure`, `n`, `newest`: the newest `window` dead deliveries
        /// grouped, at most `limit` groups.
        dead_groups: DeadGroups(limit: i64, window: i64),
    }
}
