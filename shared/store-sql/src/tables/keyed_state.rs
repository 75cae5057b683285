//! `KeyedStateSql`: the slots of the keyed-state role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_keyed_state`.
    pub struct KeyedStateSql {
        /// Create the row, unleased and without a value, unless it exists.
        ensure: Ensure(kind: String, name: String, now: DateTime<Utc>),
        /// Take the lease when free or expired at `now`; returns `lease_generation`, `value`,
        /// `encoding` and `version`.
        claim: Claim(
            kind: String,
            name: String,
            owner: String,
            now: DateTime<Utc>,
            expires_at: DateTime<Utc>,
        ),
        /// Extend a live lease.
        extend: Extend(
            kind: String,
            name: String,
            owner: String,
            generation: i64,
            now: DateTime<Utc>,
            expires_at: DateTime<Utc>,
        ),
        /// Write the value if the lease is the one given and live and the row at `version`,
        /// advancing the version: the fence and the compare-and-set in one statement.
        write: Write(
            kind: String,
            name: String,
            owner: String,
            generation: i64,
            version: i64,
            value: String,
            encoding: i64,
            now: DateTime<Utc>,
        ),
        /// Give the lease up.
        release: Release(kind: String, name: String, owner: String, generation: i64),
        /// Returns the row ([`KeyedState`]'s columns).
        get: Get(kind: String, name: String),
        /// Returns up to `limit` rows of `kind` by name.
        list: List(kind: String, limit: i64),
    }
}
