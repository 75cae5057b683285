//! Leases on rows (housekeeping passes and schedules): a held lease carries the generation the
//! database issued when it was taken, the fencing token every write under it is checked against
//! (the `LeaseStore` role).
//!
//! The built-in services keep their state in keyed state rows ([`KeyedState`]), each with a lease
//! of the same kind: a [`StateClaim`] is that lease together with the state as it stood when
//! taken, and a write under it is checked against both the generation and the version read (the
//! `KeyedStateStore` role).

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

/// One keyed state row as stored: a piece of a built-in service's state (a poll's cursor, a
/// grant's refresh) by its kind (the service) and its name within that kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedState {
    pub kind: String,
    pub name: String,
    /// The value last written (JSON text), `None` before the first write.
    pub value: Option<String>,
    /// The form `value` was written in (`NULL` before the first write).
    pub encoding: Option<i64>,
    /// How many writes the row has had: the compare-and-set's expected value.
    pub version: i64,
    /// Who holds its lease, until when, and the generation last issued.
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub lease_generation: i64,
    pub updated_at: DateTime<Utc>,
}

/// A claim on one keyed state row: its lease, taken at `generation` until `expires_at`, and the
/// value and version it had then. A write under the claim commits only if the lease is still
/// this one and live, and the row still at `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateClaim {
    pub kind: String,
    pub name: String,
    pub owner: String,
    /// The generation the database issued: the fencing token.
    pub generation: i64,
    pub expires_at: DateTime<Utc>,
    pub value: Option<String>,
    pub encoding: Option<i64>,
    pub version: i64,
}
