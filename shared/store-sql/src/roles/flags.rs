//! The flag role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::flags::StoredFlag;
use jadpo_core::model::flags::{FlagChange, Rollout};
use jadpo_core::ports::FlagStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{On, Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::flags;

fn stored(r: &Row) -> Result<StoredFlag, StoreError> {
    let mode = r.get_str("mode")?;
    let pct = r.get_i64("percentage")?;
    Ok(StoredFlag {
        name: r.get_str("name")?.to_owned(),
        rollout: Rollout::from_stored(mode, pct)
            .ok_or_else(|| StoreError::internal(format!("unknown flag state {mode:?} {pct}")))?,
        updated_at: r.get_timestamp("updated_at")?,
        updated_by: r.get_str("updated_by")?.to_owned(),
    })
}

fn change(r: &Row) -> Result<FlagChange, StoreError> {
    Ok(FlagChange {
        id: r.get_str("id")?.to_owned(),
        flag: r.get_str("flag")?.to_owned(),
        changed_at: r.get_timestamp("changed_at")?,
        before: r.get_str("before")?.to_owned(),
        after: r.get_str("after")?.to_owned(),
        operator: r.get_str("operator")?.to_owned(),
        db_role: r.get_str("db_role")?.to_owned(),
        os_account: r.get_opt_str("os_account")?.map(str::to_owned),
    })
}

#[async_trait]
impl<C: TransactionalStore> FlagStore for SqlStore<C> {
    async fn flag_read(&self, on: On<'_>, name: &str) -> Result<Option<StoredFlag>, StoreError> {
        self.sql
            .flags
            .get
            .query_on(on, self, flags::Get { name: name.into() })
            .await?
            .first()
            .map(stored)
            .transpose()
    }

    async fn flags_list(&self) -> Result<Vec<StoredFlag>, StoreError> {
        self.sql.flags.list.query_once(self, flags::List {}).await?.iter().map(stored).collect()
    }

    async fn flag_write(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        rollout: Rollout,
        now: DateTime<Utc>,
        who: &str,
    ) -> Result<(), StoreError> {
        let (mode, pct) = rollout.stored();
        let params = flags::Upsert {
            name: name.into(),
            mode: mode.into(),
            percentage: pct,
            now,
            who: who.into(),
        };
        self.sql.flags.upsert.execute(tx, params).await?;
        Ok(())
    }

    async fn flag_change_insert(
        &self,
        tx: &mut dyn Transaction,
        c: &FlagChange,
    ) -> Result<(), StoreError> {
        let params = flags::ChangeInsert {
            id: c.id.as_str().into(),
            flag: c.flag.as_str().into(),
            changed_at: c.changed_at,
            before: c.before.as_str().into(),
            after: c.after.as_str().into(),
            operator: c.operator.as_str().into(),
            db_role: c.db_role.as_str().into(),
            os_account: c.os_account.clone(),
        };
        self.sql.flags.change_insert.execute(tx, params).await?;
        Ok(())
    }

    async fn flag_changes(&self, name: &str, limit: u32) -> Result<Vec<FlagChange>, StoreError> {
        let rows = self
            .sql
            .flags
            .changes
            .query_once(self, flags::Changes { flag: name.into(), limit: i64::from(limit) })
            .await?;
        rows.iter().map(change).collect()
    }
}
