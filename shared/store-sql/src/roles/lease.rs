//! The lease role implemented once over each adapter's own SQL, one statement set per leased
//! table.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::lease::Lease;
use jadpo_core::model::lease::LeaseTable;
use jadpo_core::ports::LeaseStore;
use jadpo_core::sql::SqlValue;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;

#[async_trait]
impl<C: TransactionalStore> LeaseStore for SqlStore<C> {
    async fn lease_take(
        &self,
        table: LeaseTable,
        key: &str,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let sql = (self.sql.leases)(table);
        if let Some(ensure) = sql.ensure {
            ensure.execute_once(self, [key.into()]).await?;
        }
        let expires_at = now + ttl;
        let rows = sql
            .take
            .query_once(self, [key.into(), owner.into(), now.into(), expires_at.into()])
            .await?;
        rows.first()
            .map(|r| {
                Ok(Lease {
                    table,
                    key: key.to_owned(),
                    owner: owner.to_owned(),
                    generation: r.get_i64("lease_generation")?,
                    expires_at,
                })
            })
            .transpose()
    }

    async fn lease_extend(
        &self,
        lease: &Lease,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let expires_at = now + ttl;
        let params: [SqlValue; 5] = [
            lease.key.as_str().into(),
            lease.owner.as_str().into(),
            lease.generation.into(),
            now.into(),
            expires_at.into(),
        ];
        let changed = (self.sql.leases)(lease.table).extend.execute_once(self, params).await?;
        Ok((changed == 1).then(|| Lease { expires_at, ..lease.clone() }))
    }

    async fn lease_give_up(&self, lease: &Lease) -> Result<bool, StoreError> {
        let params: [SqlValue; 3] =
            [lease.key.as_str().into(), lease.owner.as_str().into(), lease.generation.into()];
        Ok((self.sql.leases)(lease.table).give_up.execute_once(self, params).await? == 1)
    }

    async fn lease_fence(
        &self,
        tx: &mut dyn Transaction,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params: [SqlValue; 4] = [
            lease.key.as_str().into(),
            lease.owner.as_str().into(),
            lease.generation.into(),
            now.into(),
        ];
        Ok((self.sql.leases)(lease.table).fence.query_opt(tx, params).await?.is_some())
    }
}
