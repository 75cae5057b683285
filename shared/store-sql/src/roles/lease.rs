//! The lease role implemented once over each adapter's own SQL, one statement set per leased
//! table.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::lease::Lease;
use jadpo_core::model::lease::LeaseTable;
use jadpo_core::ports::LeaseStore;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::lease;

crate::columns! {
    /// A lease taken (`LeaseSql::take`).
    struct Generation { lease_generation: i64 }
}

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
            ensure.execute_once(self, lease::Ensure { key: key.into() }).await?;
        }
        let expires_at = now + ttl;
        let rows = sql
            .take
            .query_once(self, lease::Take { key: key.into(), owner: owner.into(), now, expires_at })
            .await?;
        rows.first()
            .map(|r| {
                Ok(Lease {
                    table,
                    key: key.to_owned(),
                    owner: owner.to_owned(),
                    generation: Generation::read(r)?.lease_generation,
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
        let params = lease::Extend {
            key: lease.key.as_str().into(),
            owner: lease.owner.as_str().into(),
            generation: lease.generation,
            now,
            expires_at,
        };
        let changed = (self.sql.leases)(lease.table).extend.execute_once(self, params).await?;
        Ok((changed == 1).then(|| Lease { expires_at, ..lease.clone() }))
    }

    async fn lease_give_up(&self, lease: &Lease) -> Result<bool, StoreError> {
        let params = lease::GiveUp {
            key: lease.key.as_str().into(),
            owner: lease.owner.as_str().into(),
            generation: lease.generation,
        };
        Ok((self.sql.leases)(lease.table).give_up.execute_once(self, params).await? == 1)
    }

    async fn lease_fence(
        &self,
        tx: &mut dyn Transaction,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = lease::Fence {
            key: lease.key.as_str().into(),
            owner: lease.owner.as_str().into(),
            generation: lease.generation,
            now,
        };
        Ok((self.sql.leases)(lease.table).fence.query_opt(tx, params).await?.is_some())
    }
}
