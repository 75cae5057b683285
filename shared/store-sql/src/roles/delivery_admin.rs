//! Operators' changes to deliveries implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::delivery::Delivery;
use jadpo_core::ports::DeliveryAdminStore;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::rows;
use crate::store::SqlStore;

#[async_trait]
impl<C: TransactionalStore> DeliveryAdminStore for SqlStore<C> {
    async fn delivery_get_locked(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<Option<Delivery>, StoreError> {
        let row = self.sql.delivery_admin.get_locked.query_opt(tx, [id.into()]).await?;
        row.as_ref().map(rows::delivery).transpose()
    }

    async fn delivery_retry(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.sql.delivery_admin.retry.execute(tx, [id.into(), now.into()]).await? == 1)
    }

    async fn delivery_discard(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
        why: &str,
    ) -> Result<bool, StoreError> {
        let params = [id.into(), now.into(), why.into()];
        Ok(self.sql.delivery_admin.discard.execute(tx, params).await? == 1)
    }
}
