//! Sessions: durable application context shared by related runs, owned by one user.
//!
//! * [`load_or_create_session`] loads the stored row before calling `hydrate` (which runs only
//!   for a new Session), and fails closed on a broken run binding;
//! * [`restore_session`] restores an existing row only for its owner;
//! * [`update_context`] shallow-merges a patch; [`rehydrate`] replaces the context; both commit
//!   under Session OCC: `revision` advances once per mutation, `context_revision` only when the
//!   context changes, `created_at` is kept, and stale revisions or another owner are refused.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use jadpo_core::model::principal::Principal;
use jadpo_core::ports::WorkflowStore;
use jadpo_core::{StoreError, StoreErrorKind};
use jadpo_workflow::rows::SessionRecord;

/// Why a Session operation was refused. Nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No such Session for this user (another user's Session is not revealed).
    #[error("session {0} not found")]
    NotFound(String),
    /// The Session changed since it was read.
    #[error("session {0} was changed by someone else; reload it and retry")]
    Stale(String),
    /// The Session names a run that does not exist, or whose workflow is not registered here.
    #[error("session {session} is bound to run {run}, which {why}; refusing to restore it")]
    BrokenBinding {
        session: String,
        /// The run it names.
        run: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A start in a Session still bound to a run that has not finished, and the caller did not
    /// ask to re-bind it.
    #[error(
        "session {session} is bound to run {run}, which has not finished; wait for it to end, \
         cancel it, or start with \"rebind\": true to bind the Session to the new run"
    )]
    Bound {
        session: String,
        /// The run it is bound to.
        run: String,
    },
    /// A context is not a JSON object.
    #[error("a session context must be a JSON object")]
    NotAnObject,
    /// The context, serialized, is larger than [`CONTEXT_MAX_BYTES`].
    #[error(
        "a session context may hold at most {max} bytes of JSON; this one would hold {bytes}: keep \
         large data in your own tables and put its id in the context"
    )]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The most.
        max: usize,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The most bytes a Session's context may hold, serialized: every run started in the Session
/// reads it, and it is rewritten whole on each change, so it stays small.
pub const CONTEXT_MAX_BYTES: usize = 64 * 1024;

/// Refuses a context that is not an object or is larger than [`CONTEXT_MAX_BYTES`] (an import
/// checks each Session's with it too, so none arrives that no later patch could change).
pub fn check_context(context: &Value) -> Result<(), SessionError> {
    if !context.is_object() {
        return Err(SessionError::NotAnObject);
    }
    let bytes = serde_json::to_vec(context).map_or(usize::MAX, |v| v.len());
    if bytes > CONTEXT_MAX_BYTES {
        return Err(SessionError::TooLarge { bytes, max: CONTEXT_MAX_BYTES });
    }
    Ok(())
}

async fn check_binding(
    store: &dyn WorkflowStore,
    s: &SessionRecord,
    registered: &(dyn Fn(&str) -> bool + Sync),
) -> Result<(), SessionError> {
    let Some(run) = &s.active_run_id else { return Ok(()) };
    let broken = |why| SessionError::BrokenBinding { session: s.id.clone(), run: run.clone(), why };
    match store.execution_get(run).await? {
        None => Err(broken("does not exist")),
        Some(e) if !e.status.is_terminal() && !registered(&e.workflow_id) => {
            Err(broken("is still running a workflow this process does not register"))
        }
        Some(_) => Ok(()),
    }
}

/// Refuses to start another run in `s` while the run it is bound to has not finished
/// ([`SessionError::Bound`]); a start that asks to re-bind skips this. Two starts racing past it
/// still have one winner: the binding commits under the Session's revision.
pub async fn check_unbound(
    store: &dyn WorkflowStore,
    s: &SessionRecord,
) -> Result<(), SessionError> {
    let Some(run) = &s.active_run_id else { return Ok(()) };
    match store.execution_get(run).await? {
        Some(e) if !e.status.is_terminal() => {
            Err(SessionError::Bound { session: s.id.clone(), run: run.clone() })
        }
        _ => Ok(()),
    }
}

/// Restores Session `id` for `user_id`: only its owner gets it, and a broken binding fails closed.
pub async fn restore_session(
    store: &dyn WorkflowStore,
    id: &str,
    user_id: &str,
    registered: &(dyn Fn(&str) -> bool + Sync),
) -> Result<SessionRecord, SessionError> {
    restore_if(store, id, registered, |s| s.user_id == user_id).await
}

/// Session `id` when `keep` accepts it (else `NotFound`), its binding checked.
async fn restore_if(
    store: &dyn WorkflowStore,
    id: &str,
    registered: &(dyn Fn(&str) -> bool + Sync),
    keep: impl FnOnce(&SessionRecord) -> bool + Send,
) -> Result<SessionRecord, SessionError> {
    let s = store.session_get(id).await?.filter(keep);
    let s = s.ok_or_else(|| SessionError::NotFound(id.to_owned()))?;
    check_binding(store, &s, registered).await?;
    Ok(s)
}

/// Restores Session `id` for `principal`: [`SessionError::NotFound`] unless the principal owns
/// it, and a broken binding fails closed.
pub async fn restore_owned(
    store: &dyn WorkflowStore,
    id: &str,
    principal: &Principal,
    registered: &(dyn Fn(&str) -> bool + Sync),
) -> Result<SessionRecord, SessionError> {
    restore_if(store, id, registered, |s| {
        let owns = principal.owns(s.owner.as_deref());
        if !owns {
            // Answered as if absent; logged with who asked, never a credential.
            tracing::info!(
                session_id = id,
                principal = principal.kind(),
                reason = "not the owner",
                "request refused"
            );
        }
        owns
    })
    .await
}

/// Creates Session `id` for `user_id` with `context`, owned by `owner`.
pub async fn create_owned_session(
    store: &dyn WorkflowStore,
    id: &str,
    user_id: &str,
    owner: &Principal,
    now: DateTime<Utc>,
    context: Value,
) -> Result<SessionRecord, SessionError> {
    check_context(&context)?;
    store.session_create(id, user_id, &context, now, Some(&owner.owner())).await?;
    store.session_get(id).await?.ok_or_else(|| SessionError::NotFound(id.to_owned()))
}

/// Loads Session `id` for `user_id`, creating it with `hydrate()`'s context when it does not
/// exist (hydrate is not called for an existing Session).
pub async fn load_or_create_session(
    store: &dyn WorkflowStore,
    id: &str,
    user_id: &str,
    now: DateTime<Utc>,
    registered: &(dyn Fn(&str) -> bool + Sync),
    hydrate: impl FnOnce() -> Value + Send,
) -> Result<SessionRecord, SessionError> {
    if store.session_get(id).await?.is_some() {
        return restore_session(store, id, user_id, registered).await;
    }
    let context = hydrate();
    check_context(&context)?;
    match store.session_create(id, user_id, &context, now, None).await {
        Ok(()) => {}
        // Created meanwhile by another process: load theirs.
        Err(e) if e.kind() == StoreErrorKind::Conflict => {}
        Err(e) => return Err(e.into()),
    }
    restore_session(store, id, user_id, registered).await
}

async fn write(
    store: &dyn WorkflowStore,
    s: &SessionRecord,
    context: Value,
    now: DateTime<Utc>,
) -> Result<SessionRecord, SessionError> {
    check_context(&context)?;
    let changed = context != s.context;
    if !store.session_update_context(&s.id, &s.user_id, &context, s.revision, changed, now).await? {
        return Err(SessionError::Stale(s.id.clone()));
    }
    store.session_get(&s.id).await?.ok_or_else(|| SessionError::NotFound(s.id.clone()))
}

/// Shallow-merges `patch` (a JSON object) into the context, under Session OCC on `session`'s
/// revision.
pub async fn update_context(
    store: &dyn WorkflowStore,
    session: &SessionRecord,
    patch: &Value,
    now: DateTime<Utc>,
) -> Result<SessionRecord, SessionError> {
    let (Some(patch), Some(current)) = (patch.as_object(), session.context.as_object()) else {
        return Err(SessionError::NotAnObject);
    };
    let mut merged: Map<String, Value> = current.clone();
    merged.extend(patch.clone());
    write(store, session, Value::Object(merged), now).await
}

/// Replaces the context with `hydrate()`'s result, under Session OCC.
pub async fn rehydrate(
    store: &dyn WorkflowStore,
    session: &SessionRecord,
    now: DateTime<Utc>,
    hydrate: impl FnOnce() -> Value + Send,
) -> Result<SessionRecord, SessionError> {
    let context = hydrate();
    write(store, session, context, now).await
}
