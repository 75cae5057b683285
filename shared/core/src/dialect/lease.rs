//! The lease role implemented once over each adapter's own SQL, one statement set per leased
//! table.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use crate::error::StoreError;
use crate::model::lease::Lease;
use crate::model::lease::LeaseTable;
use crate::ports::LeaseStore;
use crate::sql::SqlValue;
use crate::transaction::{Transaction, TransactionalStore};

/// One leased table's statements.
#[derive(Debug)]
pub struct LeaseSql {
    /// `(key)`: create the row if missing, leaving an existing one alone; `None` for tables
    /// whose rows are created by their own feature before anyone leases them.
    pub ensure: Option<&'static str>,
    /// `(key, owner, now, expires_at)` → `lease_generation` when free or expired at `now`.
    pub take: &'static str,
    /// `(key, owner, generation, now, expires_at)`: extend a live lease.
    pub extend: &'static str,
    /// `(key, owner, generation)`: give the lease up.
    pub give_up: &'static str,
    /// `(key, owner, generation, now)` → a row while the lease is live, locking it where the
    /// dialect can so a takeover waits for the fenced write to finish.
    pub fence: &'static str,
}

/// An adapter that speaks leases through its own [`LeaseSql`].
pub trait LeaseDialect: TransactionalStore {
    /// The statements for `table`.
    fn lease_sql(&self, table: LeaseTable) -> &'static LeaseSql;
}

#[async_trait]
impl<S: LeaseDialect> LeaseStore for S {
    async fn lease_take(
        &self,
        table: LeaseTable,
        key: &str,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let sql = self.lease_sql(table);
        if let Some(ensure) = sql.ensure {
            self.execute_once(ensure, &[key.into()]).await?;
        }
        let expires_at = now + ttl;
        let rows = self
            .query_once(sql.take, &[key.into(), owner.into(), now.into(), expires_at.into()])
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
        let changed = self.execute_once(self.lease_sql(lease.table).extend, &params).await?;
        Ok((changed == 1).then(|| Lease { expires_at, ..lease.clone() }))
    }

    async fn lease_give_up(&self, lease: &Lease) -> Result<bool, StoreError> {
        let params: [SqlValue; 3] =
            [lease.key.as_str().into(), lease.owner.as_str().into(), lease.generation.into()];
        Ok(self.execute_once(self.lease_sql(lease.table).give_up, &params).await? == 1)
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
        Ok(tx.query_opt(self.lease_sql(lease.table).fence, &params).await?.is_some())
    }
}
