//! Starting a run: its first transition decided on the workflow's current version, bound to a
//! Session when asked (refused while the Session's run has not finished, unless the caller asks
//! to re-bind), and committed alone or, under an `Idempotency-Key`, with the key's claim
//! and stored response in one transaction.

use serde_json::Value;

use jadpo_core::id::new_id;
use jadpo_core::model::principal::Principal;
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::{SessionWrite, TransitionWrite};
use jadpo_workflow::state::ExecutionState;

use super::base::{EngineError, InSession, now_ms, registered};
use super::commands::enqueue_commands;
use super::session::{check_unbound, restore_owned, restore_session};
use crate::context::Engine;

/// Starts `workflow` with `input`, bound to `session` when given, owned by `owner` when given (a
/// run started over HTTP is its caller's).
pub async fn start_run(
    engine: &Engine,
    workflow: &str,
    input: Value,
    session: Option<InSession<'_>>,
    owner: Option<&Principal>,
) -> Result<ExecutionState, EngineError> {
    let start = prepare_start(engine, workflow, input, session, owner).await?;
    let store = engine.store(&start.store)?;
    store.commit_transition(&start.write()).await?;
    enqueue_commands(engine, &start.store, &start.run_id, &start.transition.commands).await;
    Ok(start.transition.state)
}

/// The `Idempotency-Key` of a start: the caller's scope, the key, and the request's digest.
#[derive(Debug, Clone, Copy)]
pub struct StartKey<'a> {
    /// Whose keys it is among (the caller).
    pub scope: &'a str,
    /// The key.
    pub key: &'a str,
    /// The request's digest: the same key with another request is refused.
    pub digest: &'a str,
}

/// A start under an `Idempotency-Key`: the new run, or the response of the start that used the
/// key first.
#[derive(Debug, Clone, PartialEq)]
pub enum Started {
    /// This request started the run; the response, as stored for a retry.
    New { status: u16, body: Value },
    /// An earlier request with the same key and the same body started it: its response.
    Replayed { status: u16, body: Value },
}

/// What a start answers: `201` with the run's id, status and revision.
pub fn started_response(state: &ExecutionState) -> (u16, Value) {
    let body = serde_json::json!({
        "run_id": state.run_id, "status": state.status, "revision": state.revision,
    });
    (201, body)
}

/// Starts a run as [`start_run`] does, once per `key`: the key's claim, the run's first
/// transition and the stored response commit in one transaction, so a retried request (even one
/// racing the first) gets the first one's response and never starts a second run; the same key
/// with another request is [`EngineError::KeyReused`].
pub async fn start_run_once(
    engine: &Engine,
    workflow: &str,
    input: Value,
    session: Option<InSession<'_>>,
    owner: Option<&Principal>,
    key: StartKey<'_>,
) -> Result<Started, EngineError> {
    let start = prepare_start(engine, workflow, input, session, owner).await?;
    let store = engine.store(&start.store)?;
    let now = engine.clock.now();
    let expires = jadpo_core::clock::after(now, engine.settings.idempotency_retention);
    let mut tx = store.begin().await?;
    let claim = store.idempotency_claim(tx.as_mut(), key.scope, key.key, key.digest, now, expires);
    let stored = match claim.await {
        Ok(stored) => stored,
        Err(e) => return Err(jadpo_core::commit_or_rollback(tx, Err(e)).await?),
    };
    if let Some(stored) = stored {
        tx.rollback().await?;
        if stored.request_digest != key.digest {
            return Err(EngineError::KeyReused(key.key.to_owned()));
        }
        let body = serde_json::from_str(&stored.body).unwrap_or(Value::String(stored.body));
        return Ok(Started::Replayed { status: stored.status, body });
    }
    let (status, body) = started_response(&start.transition.state);
    let written = async {
        store.write_transition_in(tx.as_mut(), &start.write()).await?;
        crate::fault!("workflow.before_start_response");
        let text = body.to_string();
        store.idempotency_store_response(tx.as_mut(), key.scope, key.key, status, &text).await?;
        Ok::<_, EngineError>(())
    }
    .await;
    jadpo_core::commit_or_rollback(tx, written).await?;
    crate::fault!("workflow.after_start_commit");
    enqueue_commands(engine, &start.store, &start.run_id, &start.transition.commands).await;
    Ok(Started::New { status, body })
}

/// A run's first transition, decided and ready to write.
struct Start {
    store: String,
    run_id: String,
    owner: Option<String>,
    session: Option<SessionWrite>,
    transition: jadpo_workflow::kernel::Transition,
}

impl Start {
    fn write(&self) -> TransitionWrite<'_> {
        TransitionWrite {
            owner: self.owner.as_deref(),
            actor: self.owner.as_deref(),
            run_id: &self.run_id,
            expected_revision: None,
            transition: &self.transition,
            session: self.session.clone(),
            lease: None,
        }
    }
}

/// Resolves the workflow's current version and the Session, and decides the first transition.
async fn prepare_start(
    engine: &Engine,
    workflow: &str,
    input: Value,
    session: Option<InSession<'_>>,
    owner: Option<&Principal>,
) -> Result<Start, EngineError> {
    let (def, store_name) = engine
        .app
        .workflow(workflow)
        .ok_or_else(|| EngineError::UnknownWorkflow(workflow.to_owned()))?;
    let store = engine.store(store_name)?;
    let run_id = new_id(engine.clock.as_ref()).to_string();
    let s = match session {
        Some(InSession::OfUser { id, user, rebind }) => {
            Some((restore_session(store.as_ref(), id, user, &registered(engine)).await?, rebind))
        }
        Some(InSession::OwnedBy { id, principal, rebind }) => {
            Some((restore_owned(store.as_ref(), id, principal, &registered(engine)).await?, rebind))
        }
        None => None,
    };
    if let Some((s, false)) = &s {
        check_unbound(store.as_ref(), s).await?;
    }
    let session = s.map(|(s, _)| SessionWrite {
        session_id: s.id,
        user_id: s.user_id,
        expected_revision: s.revision,
    });
    let transition = decide(def, None, &Incoming::Start { input }, &run_id, now_ms(engine))?;
    Ok(Start {
        store: store_name.to_owned(),
        run_id,
        owner: owner.map(Principal::owner),
        session,
        transition,
    })
}
