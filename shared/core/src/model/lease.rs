//! Leases on rows (housekeeping passes and schedules): a held lease carries the generation the
//! database issued when it was taken, the fencing token every write under it is checked against
//! (the `LeaseStore` role).

use chrono::{DateTime, Utc};

/// Which leased table a lease lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseTable {
    /// `jadpo_housekeeping`, keyed by the pass's name.
    Housekeeping,
    /// `jadpo_schedules`, keyed by the schedule's name (the row exists before its lease).
    Schedules,
}

/// A held lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub table: LeaseTable,
    /// The row's key.
    pub key: String,
    /// The holder.
    pub owner: String,
    /// The generation issued at acquisition: the fencing token.
    pub generation: i64,
    /// When it expires unless renewed.
    pub expires_at: DateTime<Utc>,
}
