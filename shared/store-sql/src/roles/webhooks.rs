//! The webhook receipt role implemented once over each adapter's own SQL: the claim is one
//! insert that does nothing on a taken key, then, only then, a read of the receipt that took it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::webhook::Receipt;
use jadpo_core::ports::WebhookStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::webhooks;

crate::columns! {
    /// A receipt (`WebhookSql::get`).
    struct ReceiptColumns {
        id: String,
        source: String,
        event_key: String,
        action: String,
        request_id: String,
        received_at: DateTime<Utc>,
        signed_at: Option<DateTime<Utc>>,
        headers: String,
        body: Vec<u8>,
    }
}

fn receipt(r: &Row) -> Result<Receipt, StoreError> {
    let c = ReceiptColumns::read(r)?;
    Ok(Receipt {
        id: c.id,
        source: c.source,
        event_key: c.event_key,
        action: c.action,
        request_id: c.request_id,
        received_at: c.received_at,
        signed_at: c.signed_at,
        headers: c.headers,
        body: c.body,
    })
}

#[async_trait]
impl<C: TransactionalStore> WebhookStore for SqlStore<C> {
    async fn receipt_claim(
        &self,
        tx: &mut dyn Transaction,
        r: &Receipt,
    ) -> Result<Option<Receipt>, StoreError> {
        let sql = self.sql.webhooks;
        let params = webhooks::Claim {
            id: r.id.as_str().into(),
            source: r.source.as_str().into(),
            event_key: r.event_key.as_str().into(),
            action: r.action.as_str().into(),
            request_id: r.request_id.as_str().into(),
            received_at: r.received_at,
            signed_at: r.signed_at,
            headers: r.headers.as_str().into(),
            body: r.body.clone(),
        };
        if sql.claim.query_opt(tx, params).await?.is_some() {
            return Ok(None);
        }
        let get = webhooks::Get {
            source: r.source.as_str().into(),
            event_key: r.event_key.as_str().into(),
        };
        let existing = sql.get.query_opt(tx, get).await?;
        let existing = existing.ok_or_else(|| {
            StoreError::internal("a receipt's key was taken, but no receipt holds it")
        })?;
        receipt(&existing).map(Some)
    }

    async fn receipts_expire(
        &self,
        tx: &mut dyn Transaction,
        source: &str,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let params = webhooks::Expire { source: source.into(), cutoff, limit: i64::from(limit) };
        self.sql.webhooks.expire.execute(tx, params).await
    }

    async fn receipt_get(
        &self,
        source: &str,
        event_key: &str,
    ) -> Result<Option<Receipt>, StoreError> {
        let params = webhooks::Get { source: source.into(), event_key: event_key.into() };
        let rows = self.sql.webhooks.get.query_once(self, params).await?;
        rows.first().map(receipt).transpose()
    }
}
