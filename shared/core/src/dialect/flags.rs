//! The flag role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::flags::StoredFlag;
use crate::model::flags::{FlagChange, Rollout};
use crate::ports::FlagStore;
use crate::sql::Row;
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's statements for `jadpo_flags` and `jadpo_flag_changes`.
#[derive(Debug)]
pub struct FlagSql {
    /// `(name)` → `name, mode, percentage, updated_at, updated_by`.
    pub get: &'static str,
    /// `()` → every stored flag, by name.
    pub list: &'static str,
    /// `(name, mode, percentage, now, who)`: insert or replace.
    pub upsert: &'static str,
    /// `(id, flag, changed_at, before, after, operator, db_role)`.
    pub change_insert: &'static str,
    /// `(flag, limit)` → changes, newest first.
    pub changes: &'static str,
}

/// An adapter that speaks flags through its own [`FlagSql`].
pub trait FlagDialect: TransactionalStore {
    /// The adapter's statements.
    fn flag_sql(&self) -> &'static FlagSql;
}

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
    })
}

#[async_trait]
impl<S: FlagDialect> FlagStore for S {
    async fn flag_read(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
    ) -> Result<Option<StoredFlag>, StoreError> {
        tx.query_opt(self.flag_sql().get, &[name.into()]).await?.as_ref().map(stored).transpose()
    }

    async fn flag_read_once(&self, name: &str) -> Result<Option<StoredFlag>, StoreError> {
        self.query_once(self.flag_sql().get, &[name.into()]).await?.first().map(stored).transpose()
    }

    async fn flags_list(&self) -> Result<Vec<StoredFlag>, StoreError> {
        self.query_once(self.flag_sql().list, &[]).await?.iter().map(stored).collect()
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
        let params = [name.into(), mode.into(), pct.into(), now.into(), who.into()];
        tx.execute(self.flag_sql().upsert, &params).await?;
        Ok(())
    }

    async fn flag_change_insert(
        &self,
        tx: &mut dyn Transaction,
        c: &FlagChange,
    ) -> Result<(), StoreError> {
        let params = [
            c.id.as_str().into(),
            c.flag.as_str().into(),
            c.changed_at.into(),
            c.before.as_str().into(),
            c.after.as_str().into(),
            c.operator.as_str().into(),
            c.db_role.as_str().into(),
        ];
        tx.execute(self.flag_sql().change_insert, &params).await?;
        Ok(())
    }

    async fn flag_changes(&self, name: &str, limit: u32) -> Result<Vec<FlagChange>, StoreError> {
        let rows = self
            .query_once(self.flag_sql().changes, &[name.into(), i64::from(limit).into()])
            .await?;
        rows.iter().map(change).collect()
    }
}
