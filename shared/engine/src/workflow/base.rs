//! What every workflow use case shares: why a request was refused ([`EngineError`]), the
//! Session a new run starts in ([`InSession`]), and the engine's clock and registry as the
//! kernel reads them. Kept apart from [`super::runs`] and [`super::start`] so that neither has to
//! reach into the other for them.

use jadpo_core::StoreError;
use jadpo_core::model::principal::Principal;
use jadpo_core::ports::TransitionError;
use jadpo_workflow::kernel::KernelError;

use super::session::SessionError;
use crate::context::Engine;

/// Why a workflow request was refused. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No workflow has that id.
    #[error("no workflow named {0:?}")]
    UnknownWorkflow(String),
    /// No run has that id.
    #[error("no run {0}")]
    NotFound(String),
    /// The caller's expected revision is stale.
    #[error("run {run_id} is at revision {actual}, not {expected}")]
    Stale {
        run_id: String,
        /// What the caller expected.
        expected: u64,
        /// What the run is at.
        actual: u64,
    },
    /// The run started on a workflow version this deployment does not register: it is parked,
    /// and no other version's graph may advance it.
    #[error("{0}")]
    Parked(String),
    /// The `Idempotency-Key` was used for another request.
    #[error("Idempotency-Key {0:?} was used for a different request")]
    KeyReused(String),
    /// The kernel refused the event (it does not fit the run's state).
    #[error(transparent)]
    Rejected(#[from] KernelError),
    /// The Session refused.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The transition lost a race or a check.
    #[error(transparent)]
    Transition(#[from] TransitionError),
    /// An operator's cancel gave no reason.
    #[error("say why the run is cancelled: a reason is required")]
    NoReason,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The Session a new run starts in, and who may use it. A Session bound to a run that has not
/// finished refuses the start ([`SessionError::Bound`](super::session::SessionError::Bound))
/// unless `rebind` asks to bind it to the new run instead (the old run goes on, unbound).
#[derive(Debug, Clone, Copy)]
pub enum InSession<'a> {
    /// Session `id` of user `user` (the application's own calls).
    OfUser { id: &'a str, user: &'a str, rebind: bool },
    /// Session `id`, which `principal` must own (a request's): another's is `NotFound`.
    OwnedBy { id: &'a str, principal: &'a Principal, rebind: bool },
}

/// The engine's clock in Unix milliseconds, as the kernel reads time.
pub(super) fn now_ms(engine: &Engine) -> i64 {
    engine.clock.now().timestamp_millis()
}

/// Whether a workflow id is registered in this deployment.
pub(super) fn registered(engine: &Engine) -> impl Fn(&str) -> bool + '_ {
    |id: &str| engine.app.workflow(id).is_some()
}
