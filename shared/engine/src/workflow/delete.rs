//! Deleting a run at an operator's request (`jadpo runs delete`): an audited, destructive act.
//!
//! The run's events, commands and lease go with it (the tables cascade), its commands' dispatch
//! rows are deleted in the same transaction so the relay never sends a command that no longer
//! exists, and a Session bound to it is unbound rather than left naming a missing run (which
//! would make restoring it fail closed). The operator action, with the run as it was, is
//! recorded in that transaction: the deletion and its record commit together or not at all.
//! A run that has not finished is refused unless the operator forces it.

use jadpo_core::clock::Clock;
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::{Store, StoreError};
use jadpo_workflow::rows::RunDeleted;
use serde_json::json;

use crate::operate::{Change, Operator};

/// Why a run was not deleted; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// No run has that id in the store.
    #[error("no run {0} in this store")]
    NotFound(String),
    /// The run has not finished, and the deletion was not forced.
    #[error(
        "run {run_id} is {status}, not finished: cancel it first, or pass --force to delete it \
         with its pending commands"
    )]
    Unfinished {
        run_id: String,
        /// Its status.
        status: String,
    },
    /// The reason was blank.
    #[error("say why the run is deleted: --reason TEXT")]
    NoReason,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Deletes run `run_id` from `store` as `operator`, for `reason`; an unfinished run only when
/// `force`. Returns what went with it.
pub async fn delete_run(
    store: &dyn Store,
    clock: &dyn Clock,
    operator: &Operator,
    run_id: &str,
    reason: &str,
    force: bool,
) -> Result<RunDeleted, DeleteError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(DeleteError::NoReason);
    }
    let state =
        store.execution_get(run_id).await?.ok_or_else(|| DeleteError::NotFound(run_id.into()))?;
    if !state.status.is_terminal() && !force {
        return Err(DeleteError::Unfinished {
            run_id: run_id.to_owned(),
            status: state.status.as_str().to_owned(),
        });
    }
    let owner = store.execution_owner(run_id).await?;
    let mut change = Change::begin(store, operator, clock).await?;
    let result = async {
        let now = change.now();
        let deleted = store
            .execution_delete_in(change.tx(), run_id, now)
            .await?
            .ok_or_else(|| DeleteError::NotFound(run_id.to_owned()))?;
        let item_state = json!({
            "workflow": state.workflow_id, "version": state.workflow_version,
            "status": state.status.as_str(), "revision": state.revision, "owner": owner,
            "events": deleted.events, "commands": deleted.commands,
            "sessions_unbound": deleted.sessions_unbound,
        });
        let action = OperatorAction {
            action: "run.delete",
            item_kind: "run",
            item: run_id,
            item_state,
            detail: Some(reason.to_owned()),
        };
        change.record(&action).await?;
        Ok::<_, DeleteError>(deleted)
    }
    .await;
    change.finish(result).await
}
