//! The workflow store contract: one OCC-guarded transaction per transition.
//!
//! [`WorkflowStore::commit_transition`] performs the specification's atomic write lifecycle in one
//! transaction: lock/read the execution's revision, reject unless it equals the expected one,
//! write the materialized execution, append the events (`${runId}:${seq}`), insert the new
//! commands, acknowledge finished commands, lock/read the Session when one is bound, reject an
//! owner mismatch or stale Session revision, bind the Session to the run. A loser of either
//! check exposes nothing. The steps are written once, over each
//! adapter's statements, in the dialect layer.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::StoreError;
use crate::transaction::Transaction;
use jadpo_workflow::rows::{CommandRow, ExecutionLease, SessionRecord, TransitionWrite};
use jadpo_workflow::state::{ExecutionState, RuntimeEvent};

/// The role that keeps workflow runs and Sessions.
#[async_trait]
pub trait WorkflowStore: Send + Sync {
    /// Commits a transition atomically (the nine steps), or nothing.
    async fn commit_transition(&self, write: &TransitionWrite<'_>) -> Result<(), TransitionError>;

    /// Writes a transition (the nine steps) inside `tx`, which the caller commits with the rest
    /// of its rows (a start's idempotency record); nothing is committed here.
    async fn write_transition_in(
        &self,
        tx: &mut dyn Transaction,
        write: &TransitionWrite<'_>,
    ) -> Result<(), TransitionError>;

    /// The materialized state of a run.
    async fn execution_get(&self, run_id: &str) -> Result<Option<ExecutionState>, StoreError>;

    /// A run's events in `seq` order.
    async fn execution_events(&self, run_id: &str) -> Result<Vec<RuntimeEvent>, StoreError>;

    /// At most `limit` of a run's events after `after_seq`, in `seq` order, each with the
    /// principal that made it (`None`: the runtime): one bounded read, for paging.
    async fn execution_events_page(
        &self,
        run_id: &str,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<(RuntimeEvent, Option<String>)>, StoreError>;

    /// Who made each of a run's events that a principal made, by `seq`.
    async fn execution_event_actors(
        &self,
        run_id: &str,
    ) -> Result<std::collections::BTreeMap<u64, String>, StoreError>;

    /// Who owns run `run_id` (`Principal::owner`); `None` when the run is missing or has no owner.
    async fn execution_owner(&self, run_id: &str) -> Result<Option<String>, StoreError>;

    /// Creates a Session for `user_id`, owned by the principal `owner` when given.
    async fn session_create(
        &self,
        id: &str,
        user_id: &str,
        context: &Value,
        now: DateTime<Utc>,
        owner: Option<&str>,
    ) -> Result<(), StoreError>;

    /// A Session.
    async fn session_get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError>;

    /// Replaces a Session's context under Session OCC (owner and expected revision); `false`
    /// when the owner or revision does not match. `context_changed` advances `context_revision`.
    async fn session_update_context(
        &self,
        id: &str,
        user_id: &str,
        context: &Value,
        expected_revision: i64,
        context_changed: bool,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Takes the lease on `run_id` for `worker_id` until `expires_at` (ms) if it is free or
    /// expired at `now`; `None` while another holder's lease is live.
    async fn run_lease_take(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        expires_at: i64,
    ) -> Result<Option<ExecutionLease>, StoreError>;

    /// Extends a live lease; `false` when it expired or was taken over.
    async fn run_lease_extend(
        &self,
        run_id: &str,
        lease_id: &str,
        now_ms: i64,
        expires_at: i64,
    ) -> Result<bool, StoreError>;

    /// Releases a lease (the row is deleted).
    async fn run_lease_give_up(&self, run_id: &str, lease_id: &str) -> Result<bool, StoreError>;

    /// Runs that are running or cancelling and hold no live lease: work to resume.
    async fn runs_runnable(&self, now_ms: i64, limit: u32) -> Result<Vec<String>, StoreError>;

    /// Leases that expired at `now_ms` without being released: their holder stopped
    /// mid-capability (a clean finish, a committed result and a give-up all delete the row).
    /// Oldest first, at most `limit`.
    async fn run_leases_expired(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ExecutionLease>, StoreError>;

    /// Deletes lease `lease_id` of `run_id` if it is still expired at `now_ms` (not renewed or
    /// taken over meanwhile); `false` otherwise.
    async fn run_lease_clear_expired(
        &self,
        run_id: &str,
        lease_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Stamps every pending command of `run_id` as put on the queue at `now` and returns their
    /// ids, to be sent now (a run whose executor stopped is resumed at once, not after the
    /// redelivery window).
    async fn commands_resend_for_run(
        &self,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;

    /// A command.
    async fn command_get(&self, id: &str) -> Result<Option<CommandRow>, StoreError>;

    /// Claims pending commands of live runs that were never sent or were lost (see
    /// [`WorkflowSql::commands_claim_due`]).
    async fn commands_claim_due(
        &self,
        now: DateTime<Utc>,
        lost_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;

    /// Records that a command was put on the queue at `now`.
    async fn command_mark_enqueued(
        &self,
        id: &str,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}

/// Why a transition did not commit. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum TransitionError {
    /// The run's revision is not the expected one (another transition won).
    #[error("run {run_id} is at revision {actual:?}, not {expected:?}")]
    StaleRevision {
        run_id: String,
        /// What the caller expected.
        expected: Option<u64>,
        /// What the store has.
        actual: Option<u64>,
    },
    /// The Session belongs to someone else, or does not exist.
    #[error("session {0} does not exist or belongs to another user")]
    SessionNotFound(String),
    /// The Session's revision is not the expected one.
    #[error("session {session_id} is at revision {actual}, not {expected}")]
    StaleSession {
        session_id: String,
        /// What the caller expected.
        expected: i64,
        /// What the store has.
        actual: i64,
    },
    /// The writer's lease expired or was taken over: it may not write.
    #[error("the lease on run {0} is no longer held")]
    LeaseLost(String),
    /// A command acknowledged by the transition is not pending (already acknowledged).
    #[error("command {0} is not pending")]
    CommandNotPending(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
