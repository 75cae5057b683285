//! Giving an ownerless run or Session an owner at an operator's request (`jadpo runs adopt`,
//! `jadpo sessions adopt`).
//!
//! Why: a run or Session made before owners were recorded, or imported from a database that
//! kept none, is no principal's, so every route answers `404` for it and nothing else could
//! ever reach it. Only an ownerless one is adopted: an owned one keeps its owner (changing who
//! owns a live object is not an operator's shortcut), and the owner must be a principal's
//! (`user:<id>` or `service:<name>`). The assignment and its operator action, with the object as
//! it was, commit in one transaction.

use jadpo_core::clock::Clock;
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::model::principal::Principal;
use jadpo_core::{Store, StoreError};
use serde_json::json;

use crate::operate::{Change, Operator};

/// Why nothing was adopted; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// No such run or Session in the store.
    #[error("no {kind} {id} in this store")]
    NotFound {
        /// `run` or `Session`.
        kind: &'static str,
        id: String,
    },
    /// It has an owner already.
    #[error("{kind} {id} is owned by {owner} already: only an ownerless one is adopted")]
    Owned {
        /// `run` or `Session`.
        kind: &'static str,
        id: String,
        /// Its owner.
        owner: String,
    },
    /// The owner given is not a principal's.
    #[error("{0:?} is not an owner: give user:<id> or service:<name>")]
    BadOwner(String),
    /// The reason was blank.
    #[error("say why it is adopted: --reason TEXT")]
    NoReason,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What `jadpo … adopt` is given: the new owner and why.
#[derive(Debug, Clone, Copy)]
pub struct Adoption<'a> {
    /// `user:<id>` or `service:<name>`.
    pub owner: &'a str,
    /// Why (recorded).
    pub reason: &'a str,
}

impl Adoption<'_> {
    fn checked(&self) -> Result<(String, String), AdoptError> {
        let reason = self.reason.trim();
        if reason.is_empty() {
            return Err(AdoptError::NoReason);
        }
        let owner = Principal::from_owner(self.owner.trim())
            .ok_or_else(|| AdoptError::BadOwner(self.owner.to_owned()))?;
        Ok((owner.owner(), reason.to_owned()))
    }
}

/// Gives ownerless run `run_id` the owner `adoption` names, as `operator`.
pub async fn adopt_run(
    store: &dyn Store,
    clock: &dyn Clock,
    operator: &Operator,
    run_id: &str,
    adoption: Adoption<'_>,
) -> Result<(), AdoptError> {
    let (owner, reason) = adoption.checked()?;
    let not_found = || AdoptError::NotFound { kind: "run", id: run_id.to_owned() };
    let state = store.execution_get(run_id).await?.ok_or_else(not_found)?;
    if let Some(existing) = store.execution_owner(run_id).await? {
        return Err(AdoptError::Owned { kind: "run", id: run_id.to_owned(), owner: existing });
    }
    let mut change = Change::begin(store, operator, clock).await?;
    let result = async {
        if !store.execution_adopt_in(change.tx(), run_id, &owner).await? {
            return Err(owned_meanwhile("run", run_id));
        }
        let item_state = json!({
            "workflow": state.workflow_id, "status": state.status.as_str(),
            "revision": state.revision, "owner": null, "new_owner": owner,
        });
        record(&mut change, ("run", run_id), item_state, &reason).await
    }
    .await;
    change.finish(result).await
}

/// Gives ownerless Session `id` the owner `adoption` names, as `operator`.
pub async fn adopt_session(
    store: &dyn Store,
    clock: &dyn Clock,
    operator: &Operator,
    id: &str,
    adoption: Adoption<'_>,
) -> Result<(), AdoptError> {
    let (owner, reason) = adoption.checked()?;
    let not_found = || AdoptError::NotFound { kind: "Session", id: id.to_owned() };
    let session = store.session_get(id).await?.ok_or_else(not_found)?;
    if let Some(existing) = session.owner {
        return Err(AdoptError::Owned { kind: "Session", id: id.to_owned(), owner: existing });
    }
    let mut change = Change::begin(store, operator, clock).await?;
    let result = async {
        let now = change.now();
        if !store.session_adopt_in(change.tx(), id, &owner, now).await? {
            return Err(owned_meanwhile("Session", id));
        }
        let item_state = json!({
            "user_id": session.user_id, "active_run_id": session.active_run_id,
            "revision": session.revision, "owner": null, "new_owner": owner,
        });
        record(&mut change, ("session", id), item_state, &reason).await
    }
    .await;
    change.finish(result).await
}

/// Records `<kind>.adopt` of item `id` (as it was: `item_state`) for `reason` in the change.
async fn record(
    change: &mut Change<'_>,
    (kind, id): (&'static str, &str),
    item_state: serde_json::Value,
    reason: &str,
) -> Result<(), AdoptError> {
    let action_name = format!("{kind}.adopt");
    let action = OperatorAction {
        action: &action_name,
        item_kind: kind,
        item: id,
        item_state,
        detail: Some(reason.to_owned()),
    };
    change.record(&action).await?;
    Ok(())
}

/// The refusal when the row changed between the read and the write (deleted, or adopted by a
/// concurrent operator).
fn owned_meanwhile(kind: &'static str, id: &str) -> AdoptError {
    AdoptError::Owned { kind, id: id.to_owned(), owner: "another operator, meanwhile".to_owned() }
}
