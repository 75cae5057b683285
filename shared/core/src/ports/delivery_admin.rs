//! The role behind operators' changes to deliveries: read one locked, make it due again,
//! discard it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::delivery::Delivery;
use crate::transaction::Transaction;

/// The delivery administration role.
#[async_trait]
pub trait DeliveryAdminStore: Send + Sync {
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
