//! The housekeeping role: each record class deleted in bounded batches, stuck deliveries
//! handed back to the relay, alerts raised once, and the completed pass recorded.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::alert::Alert;
use crate::model::housekeeping::RecordClass;
use crate::transaction::Transaction;

/// The housekeeping role.
#[async_trait]
pub trait HousekeepingStore: Send + Sync {
    /// Deletes up to `limit` rows of `class` older than `cutoff`; how many.
    async fn housekeeping_delete(
        &self,
        tx: &mut dyn Transaction,
        class: RecordClass,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError>;
    /// Hands up to `limit` stuck deliveries back to the relay; how many.
    async fn housekeeping_rescue(
        &self,
        tx: &mut dyn Transaction,
        enqueued_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError>;
    /// Raises up to `limit` dead-delivery alerts.
    async fn housekeeping_dead_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError>;
    /// Raises up to `limit` overdue-schedule alerts.
    async fn housekeeping_overdue_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        due_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError>;
    /// Records the completed pass `name`.
    async fn housekeeping_complete(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}
