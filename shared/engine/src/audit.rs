//! The audit trail's use cases: installing each audited entity's triggers after migrations,
//! and erasing a record with its audit rows (`jadpo audit erase`, recorded as an operator action
//! without the record's content).

use jadpo_core::clock::Clock;
use jadpo_core::commit_or_rollback;
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::{Store, StoreError, Transaction};
use serde_json::json;

use crate::operate::{Change, Operator};

/// Why an audit operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// No audited entity has that name.
    #[error("no audited entity named {0:?}")]
    Unknown(String),
    /// The record does not exist (erasure).
    #[error("no {entity} record with id {id:?}")]
    NoRecord {
        entity: String,
        /// The id.
        id: String,
    },
    /// An operator's erasure without a reason.
    #[error("an erasure needs a reason: pass --reason TEXT")]
    NoReason,
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Installs (or replaces) the audit triggers of every entity in `audited` (all in `store`);
/// idempotent, run after migrations by `jadpo migrate apply` and the local process.
pub async fn ensure_triggers(store: &dyn Store, audited: &[&AuditSpec]) -> Result<(), StoreError> {
    if audited.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin().await?;
    for spec in audited {
        for statement in store.audit_trigger_ddl(spec) {
            tx.batch(&statement).await?;
        }
    }
    tx.commit().await
}

/// Erases record `id` of `spec`: deletes the record and every audit row about it, in one
/// transaction. Returns how many audit rows went with it.
pub async fn erase(store: &dyn Store, spec: &AuditSpec, id: &str) -> Result<u64, AuditError> {
    let mut tx = store.begin().await?;
    let result = erase_in(store, tx.as_mut(), spec, id).await;
    commit_or_rollback(tx, result).await
}

/// [`erase`] inside `tx`, for callers recording something with it (the operator's action).
pub async fn erase_in(
    store: &dyn jadpo_core::ports::AuditStore,
    tx: &mut dyn Transaction,
    spec: &AuditSpec,
    id: &str,
) -> Result<u64, AuditError> {
    if store.audit_erase_record(tx, spec, id).await? == 0 {
        return Err(AuditError::NoRecord { entity: spec.entity.clone(), id: id.to_owned() });
    }
    Ok(store.audit_delete_rows(tx, &spec.entity, id).await?)
}

/// Erases record `id` of `spec` for `reason` as `operator`: the record and its audit rows deleted
/// and the erasure recorded (how many audit rows went, and why; never the record's content), in
/// one transaction. Returns how many audit rows went with the record.
pub async fn erase_as_operator(
    store: &dyn Store,
    clock: &dyn Clock,
    operator: &Operator,
    spec: &AuditSpec,
    id: &str,
    reason: &str,
) -> Result<u64, AuditError> {
    if reason.trim().is_empty() {
        return Err(AuditError::NoReason);
    }
    let mut change = Change::begin(store, operator, clock).await?;
    let result = async {
        let removed = erase_in(store, change.tx(), spec, id).await?;
        change
            .record(&OperatorAction {
                action: "record.erase",
                item_kind: &spec.entity,
                item: id,
                item_state: json!({"audit_rows_removed": removed}),
                detail: Some(reason.to_owned()),
            })
            .await?;
        Ok::<_, AuditError>(removed)
    }
    .await;
    change.finish(result).await
}
