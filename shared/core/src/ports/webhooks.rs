//! The webhook receipt role: one row per source and event key (`jadpo_webhook_receipts`),
//! claimed inside the transaction of the action the event feeds.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::webhook::Receipt;
use crate::transaction::Transaction;

/// The webhook receipt role.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Inside `tx`: writes `receipt` unless one with its source and key exists, in which case
    /// that one is returned and nothing is written. A concurrent claim of the same key waits for
    /// this transaction and then finds the receipt.
    async fn receipt_claim(
        &self,
        tx: &mut dyn Transaction,
        receipt: &Receipt,
    ) -> Result<Option<Receipt>, StoreError>;

    /// Inside `tx`: deletes at most `limit` receipts of `source` received before `cutoff`;
    /// how many.
    async fn receipts_expire(
        &self,
        tx: &mut dyn Transaction,
        source: &str,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError>;

    /// The receipt of `source` for `event_key`, if any.
    async fn receipt_get(
        &self,
        source: &str,
        event_key: &str,
    ) -> Result<Option<Receipt>, StoreError>;
}
