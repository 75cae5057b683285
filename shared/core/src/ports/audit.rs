//! The audit role: the trigger DDL of an audited entity, the transaction's acting context, and
//! the trail's rows (read, expired in batches, erased with their record).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::audit::{AuditContext, AuditRow, AuditSpec, Fields};
use crate::transaction::Transaction;

/// The audit role.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Idempotent statements installing `spec`'s triggers.
    fn audit_trigger_ddl(&self, spec: &AuditSpec) -> Vec<String>;
    /// Tells the database who is acting in `tx`.
    async fn audit_set_context(
        &self,
        tx: &mut dyn Transaction,
        ctx: &AuditContext<'_>,
    ) -> Result<(), StoreError>;
    /// Forgets it (before commit).
    async fn audit_clear_context(&self, tx: &mut dyn Transaction) -> Result<(), StoreError>;
    /// A record's changes by `seq`.
    async fn audit_rows(&self, entity: &str, record_id: &str) -> Result<Vec<AuditRow>, StoreError>;
    /// A record's audited fields now, as text; `None` when it does not exist.
    async fn audit_current(&self, spec: &AuditSpec, id: &str)
    -> Result<Option<Fields>, StoreError>;
    /// Deletes the record itself; how many rows (0 or 1).
    async fn audit_erase_record(
        &self,
        tx: &mut dyn Transaction,
        spec: &AuditSpec,
        id: &str,
    ) -> Result<u64, StoreError>;
    /// Deletes every audit row about a record; how many.
    async fn audit_delete_rows(
        &self,
        tx: &mut dyn Transaction,
        entity: &str,
        record_id: &str,
    ) -> Result<u64, StoreError>;
    /// Deletes up to `limit` of `entity`'s rows changed before `cutoff`; how many.
    async fn audit_expire(
        &self,
        tx: &mut dyn Transaction,
        entity: &str,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError>;
}
