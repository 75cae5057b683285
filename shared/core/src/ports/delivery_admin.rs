//! The role behind operators' view of deliveries and their changes: pages by keyset, where a
//! store's deliveries stand, dead ones grouped; read one locked, make it due again, discard it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::delivery::{DeadGroup, Delivery, DeliveryQuery, DeliverySummary};
use crate::transaction::Transaction;

/// The delivery administration role.
#[async_trait]
pub trait DeliveryAdminStore: Send + Sync {
    /// One page of deliveries matching `query`, newest first.
    async fn deliveries_page(&self, query: &DeliveryQuery) -> Result<Vec<Delivery>, StoreError>;
    /// Counts per status and of deaths since `since`, each stopping at `cap`; the oldest
    /// pending delivery's creation.
    async fn deliveries_summary(
        &self,
        since: DateTime<Utc>,
        cap: u32,
    ) -> Result<DeliverySummary, StoreError>;
    /// The newest `window` dead deliveries (by creation) grouped by subscriber and last
    /// failure, the largest groups first, at most `limit` groups: bounded however many
    /// deliveries died.
    async fn dead_groups(&self, limit: u32, window: u32) -> Result<Vec<DeadGroup>, StoreError>;
    /// The delivery `id`, locked inside `tx`.
    async fn delivery_get_locked(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<Option<Delivery>, StoreError>;
    /// Makes a pending or dead delivery due now with a fresh round of attempts.
    async fn delivery_retry(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Discards a pending or dead delivery with `why`.
    async fn delivery_discard(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
        why: &str,
    ) -> Result<bool, StoreError>;
}
