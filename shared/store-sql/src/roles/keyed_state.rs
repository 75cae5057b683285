//! The keyed-state role implemented once over each adapter's own SQL: the claim creates the row
//! on first use and takes its lease; the write is the fence and the compare-and-set in one
//! statement, so no read comes between the check and the write.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::lease::{KeyedState, StateClaim};
use jadpo_core::ports::KeyedStateStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::keyed_state;

crate::columns! {
    /// A claim taken (`KeyedStateSql::claim`).
    struct Claimed {
        lease_generation: i64,
        value: Option<String>,
        encoding: Option<i64>,
        version: i64,
    }
    /// A row (`KeyedStateSql::get`, `list`).
    struct StateColumns {
        kind: String,
        name: String,
        value: Option<String>,
        encoding: Option<i64>,
        version: i64,
        lease_owner: Option<String>,
        lease_expires_at: Option<DateTime<Utc>>,
        lease_generation: i64,
        updated_at: DateTime<Utc>,
    }
}

fn state(r: &Row) -> Result<KeyedState, StoreError> {
    let c = StateColumns::read(r)?;
    Ok(KeyedState {
        kind: c.kind,
        name: c.name,
        value: c.value,
        encoding: c.encoding,
        version: c.version,
        lease_owner: c.lease_owner,
        lease_expires_at: c.lease_expires_at,
        lease_generation: c.lease_generation,
        updated_at: c.updated_at,
    })
}

#[async_trait]
impl<C: TransactionalStore> KeyedStateStore for SqlStore<C> {
    async fn state_claim(
        &self,
        kind: &str,
        name: &str,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<StateClaim>, StoreError> {
        let sql = self.sql.keyed_state;
        let ensure = keyed_state::Ensure { kind: kind.into(), name: name.into(), now };
        sql.ensure.execute_once(self, ensure).await?;
        let expires_at = now + ttl;
        let claim = keyed_state::Claim {
            kind: kind.into(),
            name: name.into(),
            owner: owner.into(),
            now,
            expires_at,
        };
        let rows = sql.claim.query_once(self, claim).await?;
        rows.first()
            .map(|r| {
                let c = Claimed::read(r)?;
                Ok(StateClaim {
                    kind: kind.to_owned(),
                    name: name.to_owned(),
                    owner: owner.to_owned(),
                    generation: c.lease_generation,
                    expires_at,
                    value: c.value,
                    encoding: c.encoding,
                    version: c.version,
                })
            })
            .transpose()
    }

    async fn state_extend(
        &self,
        claim: &StateClaim,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<StateClaim>, StoreError> {
        let expires_at = now + ttl;
        let params = keyed_state::Extend {
            kind: claim.kind.as_str().into(),
            name: claim.name.as_str().into(),
            owner: claim.owner.as_str().into(),
            generation: claim.generation,
            now,
            expires_at,
        };
        let changed = self.sql.keyed_state.extend.execute_once(self, params).await?;
        Ok((changed == 1).then(|| StateClaim { expires_at, ..claim.clone() }))
    }

    async fn state_write(
        &self,
        tx: &mut dyn Transaction,
        claim: &StateClaim,
        value: &str,
        encoding: i16,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = keyed_state::Write {
            kind: claim.kind.as_str().into(),
            name: claim.name.as_str().into(),
            owner: claim.owner.as_str().into(),
            generation: claim.generation,
            version: claim.version,
            value: value.into(),
            encoding: i64::from(encoding),
            now,
        };
        Ok(self.sql.keyed_state.write.execute(tx, params).await? == 1)
    }

    async fn state_release(&self, claim: &StateClaim) -> Result<bool, StoreError> {
        let params = keyed_state::Release {
            kind: claim.kind.as_str().into(),
            name: claim.name.as_str().into(),
            owner: claim.owner.as_str().into(),
            generation: claim.generation,
        };
        Ok(self.sql.keyed_state.release.execute_once(self, params).await? == 1)
    }

    async fn state_get(&self, kind: &str, name: &str) -> Result<Option<KeyedState>, StoreError> {
        let params = keyed_state::Get { kind: kind.into(), name: name.into() };
        let rows = self.sql.keyed_state.get.query_once(self, params).await?;
        rows.first().map(state).transpose()
    }

    async fn states_list(&self, kind: &str, limit: i64) -> Result<Vec<KeyedState>, StoreError> {
        let params = keyed_state::List { kind: kind.into(), limit };
        let rows = self.sql.keyed_state.list.query_once(self, params).await?;
        rows.iter().map(state).collect()
    }
}
