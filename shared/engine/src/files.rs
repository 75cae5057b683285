//! Stored files' reference counts: installing each declared file field's trigger after
//! migrations, which counts the files the table's rows already hold the first time.
//!
//! Why the count is kept by a trigger: an action writes its rows with its own SQL, so a runtime
//! that counted references itself would only see what it was told; a trigger sees every insert,
//! update and delete of the column in the transaction that makes it, and a rolled-back
//! transaction takes its counting with it.

use jadpo_core::model::file_field::FileField;
use jadpo_core::{Store, StoreError, commit_or_rollback};

/// Installs (or replaces) the triggers of every field in `fields` (all in `store`), in one
/// transaction; a field whose trigger is new gets the files its existing rows hold counted.
/// Idempotent: run after migrations by `jadpo migrate apply` and the local process. Returns the
/// fields (`table.column`) whose trigger was new.
pub async fn ensure_triggers(
    store: &dyn Store,
    fields: &[&FileField],
) -> Result<Vec<String>, StoreError> {
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = store.begin().await?;
    let result = async {
        let mut new = Vec::new();
        for field in fields {
            if store.file_trigger_install(tx.as_mut(), field).await? {
                new.push(field.name());
            }
        }
        Ok::<_, StoreError>(new)
    }
    .await;
    commit_or_rollback(tx, result).await
}
