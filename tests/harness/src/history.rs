//! Writing a workflow's history as an earlier release or another implementation left it: the
//! event log is append-only in the database (Jadpo's migration 22), so a test that rewrites or
//! drops events lifts that guard first, as such a database never had it.

use jadpo_core::transaction::TransactionalStore;
use jadpo_core::{Dialect, StoreError};

/// Drops the event log's append-only triggers on `store`.
pub async fn lift_history_guard<S: TransactionalStore + ?Sized>(
    store: &S,
) -> Result<(), StoreError> {
    let statements: &[&str] = match store.dialect() {
        Dialect::Sqlite => &[
            "DROP TRIGGER IF EXISTS workflow_events_no_rewrite",
            "DROP TRIGGER IF EXISTS workflow_events_no_delete",
        ],
        Dialect::Postgres => {
            &["DROP TRIGGER IF EXISTS workflow_events_append_only ON workflow_events"]
        }
    };
    for sql in statements {
        store.execute_once(sql, &[]).await?;
    }
    Ok(())
}
