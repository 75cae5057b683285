//! The schedule role: `jadpo_schedules` (the declaration's rows, leases, next due times, pauses),
//! `jadpo_schedule_runs`, and the operator-action log.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::operator::{ActionFilter, StoredAction};
use crate::transaction::Transaction;
use jadpo_schedule::{NewRun, NewSchedule, ScheduleRow, ScheduleRun};

/// The schedule role: schedules, their runs, and operator actions.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Every stored schedule, by name.
    async fn schedules_list(&self) -> Result<Vec<ScheduleRow>, StoreError>;
    /// One schedule, read inside `tx`.
    async fn schedule_get(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
    ) -> Result<Option<ScheduleRow>, StoreError>;
    /// Creates a schedule unless it exists; `true` when created.
    async fn schedule_insert(
        &self,
        schedule: &NewSchedule<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Records a changed expression or event; `true` when something changed.
    async fn schedule_redeclare(
        &self,
        schedule: &NewSchedule<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Brings a removed schedule back, due at `next_due_at`.
    async fn schedule_restore(
        &self,
        name: &str,
        next_due_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Marks every schedule not in `declared` removed; how many were.
    async fn schedules_mark_removed(
        &self,
        declared: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// Names of schedules due at `now`.
    async fn schedules_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError>;
    /// Records a run or skipped tick; `false` when that identity was already recorded.
    async fn schedule_run_insert(
        &self,
        tx: &mut dyn Transaction,
        run: &NewRun<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Advances the next due time after a pass.
    async fn schedule_advance(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        next_due_at: DateTime<Utc>,
        last_tick_at: DateTime<Utc>,
        last_run_id: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Records an operator's run as the schedule's last run.
    async fn schedule_set_last_run(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// How many of `run_id`'s deliveries are unfinished.
    async fn schedule_run_unfinished(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
    ) -> Result<i64, StoreError>;
    /// Pauses (`Some(at)`) or resumes (`None`).
    async fn schedule_set_paused(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        paused_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Recorded runs and skipped ticks, newest first.
    async fn schedule_runs(
        &self,
        schedule: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ScheduleRun>, StoreError>;
    /// The database role `tx` runs as.
    async fn db_role(&self, tx: &mut dyn Transaction) -> Result<String, StoreError>;
    /// Records an operator action inside `tx`.
    async fn operator_action_insert(
        &self,
        tx: &mut dyn Transaction,
        action: &StoredAction,
    ) -> Result<(), StoreError>;
    /// Recorded operator actions that `filter` lets through, newest first.
    async fn operator_actions(
        &self,
        filter: &ActionFilter,
    ) -> Result<Vec<StoredAction>, StoreError>;
}
