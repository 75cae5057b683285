//! The lease primitive shared by every leased row (housekeeping passes and schedules).
//!
//! A leased row carries an owner, an expiry and a *generation* that the database increments on
//! every acquisition. A holder keeps the generation it was given; every write it makes under the
//! lease first checks, inside the write's own transaction, that the row still has that owner and
//! generation and has not expired ([`LeaseStore::lease_fence`]). A holder paused past its expiry,
//! whose lease another took, therefore cannot write: its generation is stale. Lease rows are
//! ordinary logged tables, so a lease survives a database restart like any other row.
//!
//! A workflow run's lease (`execution_leases`, the workflow store's own table) is spoken of in the
//! same words: `WorkflowStore::run_lease_take | run_lease_extend | run_lease_give_up`, and a
//! transition written under it carries a `LeaseFence` checked in the transition's transaction.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use crate::error::StoreError;
use crate::model::lease::Lease;
use crate::model::lease::LeaseTable;
use crate::transaction::Transaction;

/// The lease role.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Takes the lease on `(table, key)` for `ttl` if it is free or expired at `now`.
    async fn lease_take(
        &self,
        table: LeaseTable,
        key: &str,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError>;

    /// Extends a live lease to `now + ttl`; `None` when it was lost.
    async fn lease_extend(
        &self,
        lease: &Lease,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError>;

    /// Gives the lease up; `false` when it was already lost.
    async fn lease_give_up(&self, lease: &Lease) -> Result<bool, StoreError>;

    /// Inside `tx`, checks that `lease` is still held and live at `now`: call it first in every
    /// transaction that writes under the lease, and abandon the write when it is `false`.
    async fn lease_fence(
        &self,
        tx: &mut dyn Transaction,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
}
