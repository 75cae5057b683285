//! `LeaseSql`: the slots of the lease role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One leased table's statements.
    pub struct LeaseSql {
        /// Create the row if missing, leaving an existing one alone; `None` for tables whose rows are
        /// created by their own feature before anyone leases them.
        ensure(key): optional,
        /// Returns `lease_generation` when free or expired at `now`.
        take(key, owner, now, expires_at),
        /// Extend a live lease.
        extend(key, owner, generation, now, expires_at),
        /// Give the lease up.
        give_up(key, owner, generation),
        /// Returns a row while the lease is live, locking it where the dialect can so a takeover waits
        /// for the fenced write to finish.
        fence(key, owner, generation, now),
    }
}
