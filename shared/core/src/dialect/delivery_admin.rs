//! Operators' changes to deliveries implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::delivery::Delivery;
use crate::ports::DeliveryAdminStore;
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's statements for operator changes to deliveries.
#[derive(Debug)]
pub struct DeliveryAdminSql {
    /// `(id)` → the delivery joined with its event ([`Delivery::from_row`]'s columns), locked
    /// for the transaction where the dialect can.
    pub get_locked: &'static str,
    /// `(id, now)`: pending or dead → pending, attempts 0, due now, not held.
    pub retry: &'static str,
    /// `(id, now, why)`: pending or dead → discarded.
    pub discard: &'static str,
}

/// An adapter that speaks delivery administration through its own [`DeliveryAdminSql`].
pub trait DeliveryAdminDialect: TransactionalStore {
    /// The adapter's statements.
    fn delivery_admin_sql(&self) -> &'static DeliveryAdminSql;
}

#[async_trait]
impl<S: DeliveryAdminDialect> DeliveryAdminStore for S {
    async fn delivery_get_locked(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<Option<Delivery>, StoreError> {
        let row = tx.query_opt(self.delivery_admin_sql().get_locked, &[id.into()]).await?;
        row.as_ref().map(Delivery::from_row).transpose()
    }

    async fn delivery_retry(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(tx.execute(self.delivery_admin_sql().retry, &[id.into(), now.into()]).await? == 1)
    }

    async fn delivery_discard(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
        why: &str,
    ) -> Result<bool, StoreError> {
        let params = [id.into(), now.into(), why.into()];
        Ok(tx.execute(self.delivery_admin_sql().discard, &params).await? == 1)
    }
}
