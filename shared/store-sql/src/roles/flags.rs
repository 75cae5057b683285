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

crate::columns! {
    /// A flag (`FlagSql::get`, `list`).
    struct FlagColumns {
        name: String,
        mode: String,
        percentage: i64,
        updated_at: DateTime<Utc>,
        updated_by: String,
    }
}

fn stored(r: &Row) -> Result<StoredFlag, StoreError> {
    let f = FlagColumns::read(r)?;
    let (mode, pct) = (f.mode.as_str(), f.percentage);
    Ok(StoredFlag {
        rollout: Rollout::from_stored(mode, pct)
            .ok_or_else(|| StoreError::internal(format!("unknown flag state {mode:?} {pct}")))?,
        name: f.name,
        updated_at: f.updated_at,
        updated_by: f.updated_by,
    })
}

fn change(r: &Row) -> Result<FlagChange, StoreError> {
    crate::read_row!(r => FlagChange {
        id, flag, changed_at, before, after, operator, db_role, os_account,
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
