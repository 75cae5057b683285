//! `LeaseSql`: the slots of the lease role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One leased table's statements.
    pub struct LeaseSql {
        /// Create the row if missing, leaving an existing one alone; `None` for tables whose rows are
        /// created by their own feature before anyone leases them.
        ensure: Ensure(key: String): optional,
        /// Returns `lease_generation` when free or expired at `now`.
        take: Take(key: String, owner: String, now: DateTime<Utc>, expires_at: DateTime<Utc>),
        /// Extend a live lease.
        extend: Extend(
            key: String,
            owner: String,
            generation: i64,
            now: DateTime<Utc>,
            expires_at: DateTime<Utc>,
        ),
        /// Give the lease up.
        give_up: GiveUp(key: String, owner: String, generation: i64),
        /// Returns a row while the lease is live, locking it where the dialect can so a takeover waits
        /// for the fenced write to finish.
        fence: Fence(key: String, owner: String, generation: i64, now: DateTime<Utc>),
    }
}
