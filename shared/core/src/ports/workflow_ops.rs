//! Operator-side workflow store operations: the queries behind `jadpo verify`, paging, and the
//! logical export and import between adapters. Kept apart from `WorkflowStore`,
//! which the runtime's hot paths use.

use async_trait::async_trait;

use crate::error::StoreError;
use chrono::{DateTime, Utc};

use crate::transaction::Transaction;
use jadpo_workflow::rows::RecoveryPoint;
use jadpo_workflow::rows::RunDeleted;
use jadpo_workflow::rows::RunExport;
use jadpo_workflow::rows::SessionExport;
use jadpo_workflow::rows::{RunQuery, RunSummary};
use jadpo_workflow::state::ExecutionStatus;

/// The operator role over the workflow tables.
#[async_trait]
pub trait WorkflowOps: Send + Sync {
    /// Runs whose every event has a `${runId}:${seq}` id (new-format histories) and whose
    /// revision column differs from their last event's seq: `(run_id, revision, last_seq)`.
    /// Legacy histories, with older ids, are not held to the rule.
    async fn verify_revisions(&self) -> Result<Vec<(String, i64, i64)>, StoreError>;

    /// How many `(run_id, seq)` pairs and how many event ids occur more than once.
    async fn verify_event_ids(&self) -> Result<(i64, i64), StoreError>;

    /// Rewrites, in one transaction, the events in the `limit` positions after `after` in
    /// `(run_id, seq)` order whose payload is the inner payload alone (rows written before the
    /// complete form) into the complete serialized event. Returns the page's last position and
    /// how many rows it rewrote, `None` past the last event. Idempotent, so a run stopped part-way
    /// resumes by starting again.
    async fn events_upgrade_page(
        &self,
        after: &(String, i64),
        limit: u32,
    ) -> Result<Option<((String, i64), u64)>, StoreError>;

    /// The newest event and how many runs and events there are; `None` without events.
    async fn recovery_point(&self) -> Result<Option<RecoveryPoint>, StoreError>;

    /// Run ids after `after`, in order, at most `limit`.
    async fn executions_page(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError>;

    /// A page of runs, newest first, read by keyset (see [`RunQuery`]).
    async fn runs_page(&self, query: &RunQuery) -> Result<Vec<RunSummary>, StoreError>;

    /// How many runs have each status, each count stopping at `cap`.
    async fn runs_by_status(&self, cap: u32) -> Result<Vec<(ExecutionStatus, u64)>, StoreError>;

    /// The workflow tables' fingerprint: counts and revision sums that any write (a transition,
    /// a Session change, an import, a deletion) changes, said in words. An export compares it
    /// before and after to detect a writer it raced.
    async fn workflow_fingerprint(&self) -> Result<String, StoreError>;

    /// Every Session id.
    async fn sessions_all(&self) -> Result<Vec<String>, StoreError>;

    /// Deletes a Session.
    async fn session_delete(&self, id: &str) -> Result<(), StoreError>;

    /// Deletes an execution with its events, commands and lease (an audited, destructive act).
    async fn execution_delete(&self, run_id: &str) -> Result<(), StoreError>;

    /// Deletes run `run_id` inside `tx`, locking it first: the dispatch rows of its commands,
    /// then the execution with its events, commands and lease; the Sessions bound to it are
    /// unbound (their revision moves on, `updated_at` becomes `now`). `None`: no such run.
    async fn execution_delete_in(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<RunDeleted>, StoreError>;

    /// At most `limit` runs of `workflow_id` that finished and last changed before `before`,
    /// oldest first.
    async fn executions_finished_before(
        &self,
        tx: &mut dyn Transaction,
        workflow_id: &str,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError>;

    /// At most `limit` idle Sessions last changed before `before`, oldest first: with
    /// `Some(workflow)`, those bound to a finished run of it; with `None`, those bound to no run.
    async fn sessions_idle_before(
        &self,
        tx: &mut dyn Transaction,
        workflow_id: Option<&str>,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError>;

    /// Gives run `run_id`, which has no owner, the owner `owner` inside `tx`; `false` when no
    /// ownerless run has that id (none, or one owned already).
    async fn execution_adopt_in(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
        owner: &str,
    ) -> Result<bool, StoreError>;

    /// Gives Session `id`, which has no owner, the owner `owner` inside `tx` (its revision
    /// moves on, `updated_at` becomes `now`); `false` when no ownerless Session has that id.
    async fn session_adopt_in(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        owner: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Deletes Session `id` inside `tx`; `false` when there was none.
    async fn session_delete_in(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<bool, StoreError>;

    /// A run with its events and commands, for a logical export.
    async fn run_export(&self, run_id: &str) -> Result<Option<RunExport>, StoreError>;

    /// Writes an exported run in one transaction; a run that exists already is a conflict.
    async fn run_import(&self, run: &RunExport) -> Result<(), StoreError>;

    /// A Session, for a logical export.
    async fn session_export(&self, id: &str) -> Result<Option<SessionExport>, StoreError>;

    /// Writes an exported Session; one that exists already is a conflict.
    async fn session_import(&self, s: &SessionExport) -> Result<(), StoreError>;
}
