//! The step-record role: a run's record taken under a fenced lease, each step recorded before it
//! is sent and after it is answered, and the run finished inside the handler's transaction.
//!
//! Every write but the first is fenced by the runner's generation: a runner whose lease another
//! took over records nothing more and commits nothing (`false`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::alert::Alert;
use crate::model::step::{RunGrant, RunStart, StepAnswered, StepRecordView, StepSent};
use crate::transaction::Transaction;

/// The step-record role.
#[async_trait]
pub trait StepStore: Send + Sync {
    /// Creates the run's record, or takes it over if its lease expired, in a transaction of its
    /// own; says what the runner was granted.
    async fn step_run_acquire(&self, start: &RunStart<'_>) -> Result<RunGrant, StoreError>;

    /// [`step_run_acquire`](Self::step_run_acquire) inside `tx`: a run's first changing call
    /// commits its acquisition with the step it sends, one synced write for both.
    async fn step_run_acquire_in(
        &self,
        tx: &mut dyn Transaction,
        start: &RunStart<'_>,
    ) -> Result<RunGrant, StoreError>;

    /// Creates the run's record (generation 1) with its first step recorded sent, one synced
    /// write for both (one statement where the dialect allows); the generation, or `None` with
    /// nothing written when the record exists already (the runner then acquires it).
    async fn step_run_start_sending(
        &self,
        start: &RunStart<'_>,
        first: &StepSent<'_>,
    ) -> Result<Option<i64>, StoreError>;

    /// Records a step as sent (first time or again), with the run's shape; `false` if the
    /// runner lost the run.
    async fn step_sent(&self, sent: &StepSent<'_>) -> Result<bool, StoreError>;

    /// [`step_sent`](Self::step_sent) inside `tx`.
    async fn step_sent_in(
        &self,
        tx: &mut dyn Transaction,
        sent: &StepSent<'_>,
    ) -> Result<bool, StoreError>;

    /// Records a step's answer, fenced, in one statement of its own; `false` if the runner lost
    /// the run.
    async fn step_answered(&self, answered: &StepAnswered<'_>) -> Result<bool, StoreError>;

    /// Records a step's answer inside `tx` without fencing it: for a transaction that fences the
    /// run itself (it records the next step sent) and rolls back when the runner lost it.
    async fn step_answer_in(
        &self,
        tx: &mut dyn Transaction,
        answered: &StepAnswered<'_>,
    ) -> Result<(), StoreError>;

    /// Marks the run finished inside the handler's transaction, so it commits with its writes,
    /// with its last step's answer recorded in the same statement where the store allows
    /// (`answered`: the answer not written yet); `false` if the runner lost the run (the
    /// transaction must then roll back).
    async fn step_run_finish(
        &self,
        tx: &mut dyn Transaction,
        run_key: &str,
        generation: i64,
        answered: Option<&StepAnswered<'_>>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Gives the run up at once (its attempt failed), so the next attempt need not wait for the
    /// lease to expire; `false` if it was no longer this runner's.
    async fn step_run_release(
        &self,
        run_key: &str,
        generation: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Ends the lease of every unfinished run at `now`, so the next attempt of each takes it up
    /// at once: only for a process that has proved it is the only one using this store (the
    /// local process at start, holding its files' lock), whose predecessor's leases can then
    /// belong to no live runner. How many were ended.
    async fn step_leases_release_all(&self, now: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Marks the run diverged with `reason`; `false` if it was no longer this runner's.
    async fn step_run_diverge(
        &self,
        run_key: &str,
        generation: i64,
        reason: &str,
    ) -> Result<bool, StoreError>;

    /// The run's record and steps, if any.
    async fn step_run_get(&self, run_key: &str) -> Result<Option<StepRecordView>, StoreError>;

    /// Raises up to `limit` alerts for runs unfinished since before `started_before` (diverged
    /// ones included), recording each as raised so it is raised once.
    async fn step_unfinished_alerts(
        &self,
        tx: &mut dyn Transaction,
        started_before: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError>;
}
