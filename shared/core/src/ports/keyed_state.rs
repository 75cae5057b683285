//! The keyed-state role: the one primitive the built-in services keep their state in (a poll's
//! cursor, an OAuth grant's refresh, a debounce), so that each is written once and proven once.
//!
//! A row is claimed under a lease the database issues ([`KeyedStateStore::state_claim`]: one
//! holder at a time, a generation incremented on every acquisition), the holder then does its
//! work outside any transaction (a call to a provider), and writes the new state with
//! [`KeyedStateStore::state_write`] inside the transaction that writes the events it emits. That
//! write is one statement checking that the lease is still the claimed one and live, and that the
//! row is still at the version the claim read: a holder paused past its expiry, or a second
//! write from a stale read, changes nothing and its events roll back with it.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use crate::error::StoreError;
use crate::model::lease::{KeyedState, StateClaim};
use crate::transaction::Transaction;

/// The keyed-state role.
#[async_trait]
pub trait KeyedStateStore: Send + Sync {
    /// Claims `(kind, name)` for `owner` until `now + ttl` if its lease is free or expired at
    /// `now`, creating the row on first use; `None` while another holds it.
    async fn state_claim(
        &self,
        kind: &str,
        name: &str,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<StateClaim>, StoreError>;

    /// Extends a live claim to `now + ttl`; `None` when it was lost.
    async fn state_extend(
        &self,
        claim: &StateClaim,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<StateClaim>, StoreError>;

    /// Inside `tx`: writes `value` (in form `encoding`) if the claim's lease is still held and
    /// live at `now` and the row still at the claim's version, advancing the version; `false`
    /// (and nothing written) otherwise.
    async fn state_write(
        &self,
        tx: &mut dyn Transaction,
        claim: &StateClaim,
        value: &str,
        encoding: i16,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Gives the claim's lease up; `false` when it was already lost.
    async fn state_release(&self, claim: &StateClaim) -> Result<bool, StoreError>;

    /// The row `(kind, name)` as it stands.
    async fn state_get(&self, kind: &str, name: &str) -> Result<Option<KeyedState>, StoreError>;

    /// Up to `limit` rows of `kind`, by name.
    async fn states_list(&self, kind: &str, limit: i64) -> Result<Vec<KeyedState>, StoreError>;
}
