//! The audit role over each adapter's own SQL: static statements in [`crate::AuditSql`], and the
//! statements generated from a declaration (trigger DDL, the record's current fields, erasure)
//! by the adapter itself. Generated statements only interpolate identifiers the application
//! declared, checked at start to be plain lower-case SQL identifiers; values are parameters.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use jadpo_core::model::encoding::Kept;

use jadpo_core::error::StoreError;
use jadpo_core::model::audit::{AuditContext, AuditRow, AuditSpec, Fields};
use jadpo_core::ports::AuditStore;
use jadpo_core::sql::{Row, SqlValue};
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::audit;

crate::columns! {
    /// An audit row (`AuditSql::rows`).
    struct AuditColumns {
        entity: String,
        record_id: String,
        seq: i64,
        changed_at: DateTime<Utc>,
        kind: String,
        actor: String,
        db_role: Option<String>,
        action: Option<String>,
        request_id: Option<String>,
        trace: Option<String>,
        changes: SqlValue,
        encoding: Option<i64>,
    }
}

fn audit_row(r: &Row) -> Result<AuditRow, StoreError> {
    let r = AuditColumns::read(r)?;
    // A row kept in a form this build does not read is returned as such, the others as usual.
    let unreadable = Kept::AuditChanges.read(r.encoding).err().map(|e| e.to_string());
    let changes = match unreadable {
        Some(_) => serde_json::Value::Null,
        None => match &r.changes {
            SqlValue::Text(text) => serde_json::from_str(text)
                .map_err(|e| StoreError::internal(format!("audit changes are not JSON: {e}")))?,
            other => {
                return Err(StoreError::internal(format!(
                    "audit changes hold {}, not text",
                    other.kind()
                )));
            }
        },
    };
    Ok(AuditRow {
        entity: r.entity,
        record_id: r.record_id,
        seq: r.seq,
        changed_at: r.changed_at,
        kind: r.kind,
        actor: r.actor,
        db_role: r.db_role,
        action: r.action,
        request_id: r.request_id,
        trace: r.trace,
        changes,
        encoding: r.encoding,
        unreadable,
    })
}

/// Opens (or closes) the trail to this transaction's deletes where the dialect guards it with
/// triggers (SQLite); PostgreSQL keeps it with roles and has nothing to open.
async fn release<C: TransactionalStore>(
    store: &SqlStore<C>,
    tx: &mut dyn Transaction,
    open: bool,
) -> Result<(), StoreError> {
    let sql = store.sql.audit;
    match (open, sql.release, sql.unrelease) {
        (true, Some(release), _) => release.execute(tx, audit::Release {}).await.map(|_| ()),
        (false, _, Some(unrelease)) => unrelease.execute(tx, audit::Unrelease {}).await.map(|_| ()),
        _ => Ok(()),
    }
}

#[async_trait]
impl<C: TransactionalStore> AuditStore for SqlStore<C> {
    fn audit_trigger_ddl(&self, spec: &AuditSpec) -> Vec<String> {
        (self.sql.audit_generated.trigger_ddl)(spec)
    }

    async fn audit_set_context(
        &self,
        tx: &mut dyn Transaction,
        ctx: &AuditContext<'_>,
    ) -> Result<(), StoreError> {
        let params = audit::SetContext {
            actor: ctx.actor.into(),
            action: ctx.action.into(),
            request_id: ctx.request_id.map(str::to_owned),
            trace: ctx.trace.map(str::to_owned),
            now: ctx.now,
        };
        self.sql.audit.set_context.execute(tx, params).await?;
        Ok(())
    }

    async fn audit_clear_context(&self, tx: &mut dyn Transaction) -> Result<(), StoreError> {
        if let Some(sql) = self.sql.audit.clear_context {
            sql.execute(tx, audit::ClearContext {}).await?;
        }
        Ok(())
    }

    async fn audit_rows(&self, entity: &str, record_id: &str) -> Result<Vec<AuditRow>, StoreError> {
        let rows = self
            .sql
            .audit
            .rows
            .query_once(self, audit::Rows { entity: entity.into(), record_id: record_id.into() })
            .await?;
        rows.iter().map(audit_row).collect()
    }

    async fn audit_current(
        &self,
        spec: &AuditSpec,
        id: &str,
    ) -> Result<Option<Fields>, StoreError> {
        let rows = self.query_once(&(self.sql.audit_generated.current)(spec), &[id.into()]).await?;
        rows.first()
            .map(|r| {
                spec.columns
                    .iter()
                    .map(|c| Ok((c.clone(), r.get_opt_str(c)?.map(str::to_owned))))
                    .collect::<Result<Fields, StoreError>>()
            })
            .transpose()
    }

    async fn audit_erase_record(
        &self,
        tx: &mut dyn Transaction,
        spec: &AuditSpec,
        id: &str,
    ) -> Result<u64, StoreError> {
        tx.execute(&(self.sql.audit_generated.erase)(spec), &[id.into()]).await
    }

    async fn audit_delete_rows(
        &self,
        tx: &mut dyn Transaction,
        entity: &str,
        record_id: &str,
    ) -> Result<u64, StoreError> {
        release(self, tx, true).await?;
        let gone = self
            .sql
            .audit
            .delete_rows
            .execute(tx, audit::DeleteRows { entity: entity.into(), record_id: record_id.into() })
            .await?;
        release(self, tx, false).await?;
        Ok(gone)
    }

    async fn audit_expire(
        &self,
        tx: &mut dyn Transaction,
        entity: &str,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let params = audit::Expire { entity: entity.into(), cutoff, limit: i64::from(limit) };
        // One row per audit row deleted (PostgreSQL deletes through the owner's function).
        release(self, tx, true).await?;
        let gone = self.sql.audit.expire.query(tx, params).await?;
        release(self, tx, false).await?;
        Ok(u64::try_from(gone.len()).unwrap_or(u64::MAX))
    }
}
