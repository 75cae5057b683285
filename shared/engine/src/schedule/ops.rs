//! What operators do to schedules (`jadpo schedules pause | resume | trigger`), each change
//! recorded in `jadpo_operator_actions` in the same transaction: when, which action, the item and
//! its state then, the operator's name and the database role in use.

use std::sync::Arc;

use jadpo_core::id::new_id;
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::ports::ScheduleStore;
use jadpo_core::{Store, Transaction};
use jadpo_schedule::{ScheduleRow, Trigger};

pub use super::emit::ScheduleOpError;
use super::emit::{RunToEmit, emit_run};
use crate::context::Engine;
use crate::operate::{Change, Operator};
use crate::relay::enqueue_now;

/// Operator verbs over an engine's schedule store.
pub struct ScheduleOps<'a> {
    engine: &'a Engine,
    operator: &'a Operator,
}

impl<'a> ScheduleOps<'a> {
    /// Verbs acting as `operator`.
    pub fn new(engine: &'a Engine, operator: &'a Operator) -> Self {
        Self { engine, operator }
    }

    fn store(&self) -> Result<Arc<dyn Store>, ScheduleOpError> {
        Ok(Arc::clone(self.engine.store(self.engine.app.schedule_store())?))
    }

    /// Pauses `name`: its ticks are recorded as skipped until it is resumed.
    pub async fn pause(&self, name: &str) -> Result<ScheduleRow, ScheduleOpError> {
        self.set_paused(name, true).await
    }

    /// Resumes `name`: the ticks after now run again (the paused ones stay skipped).
    pub async fn resume(&self, name: &str) -> Result<ScheduleRow, ScheduleOpError> {
        self.set_paused(name, false).await
    }

    async fn set_paused(&self, name: &str, pause: bool) -> Result<ScheduleRow, ScheduleOpError> {
        let store = self.store()?;
        let mut change =
            Change::begin(store.as_ref(), self.operator, self.engine.clock.as_ref()).await?;
        let result = async {
            let row = self.current(store.as_ref(), change.tx(), name).await?;
            match (pause, row.paused_at.is_some()) {
                (true, true) => return Err(ScheduleOpError::AlreadyPaused(name.to_owned())),
                (false, false) => return Err(ScheduleOpError::NotPaused(name.to_owned())),
                _ => {}
            }
            change
                .record(&OperatorAction {
                    action: if pause { "schedule.pause" } else { "schedule.resume" },
                    item_kind: "schedule",
                    item: name,
                    item_state: row.to_json(),
                    detail: None,
                })
                .await?;
            let now = change.now();
            let paused_at = pause.then_some(now);
            store.schedule_set_paused(change.tx(), name, paused_at, now).await?;
            Ok::<_, ScheduleOpError>(ScheduleRow { paused_at, ..row })
        }
        .await;
        change.finish(result).await
    }

    /// Runs `name` now, whatever its timing, as an operator's run (its next due time stays).
    /// Returns the run's id.
    pub async fn trigger(&self, name: &str) -> Result<String, ScheduleOpError> {
        let store = self.store()?;
        let mut queued = Vec::new();
        let mut change =
            Change::begin(store.as_ref(), self.operator, self.engine.clock.as_ref()).await?;
        let result = async {
            let row = self.current(store.as_ref(), change.tx(), name).await?;
            let spec = self
                .engine
                .app
                .schedule(name)
                .ok_or_else(|| ScheduleOpError::Removed(name.to_owned()))?;
            let run_id = format!("{name}@operator@{}", new_id(self.engine.clock.as_ref()));
            change
                .record(&OperatorAction {
                    action: "schedule.trigger",
                    item_kind: "schedule",
                    item: name,
                    item_state: row.to_json(),
                    detail: Some(format!("run {run_id}")),
                })
                .await?;
            let now = change.now();
            let tx = change.tx();
            let run = RunToEmit { spec, id: &run_id, tick: now, trigger: Trigger::Operator };
            emit_run(self.engine, store.as_ref(), tx, run, now, &mut queued).await?;
            store.schedule_set_last_run(tx, name, &run_id, now).await?;
            Ok::<_, ScheduleOpError>(run_id)
        }
        .await;
        let run_id = change.finish(result).await?;
        enqueue_now(self.engine, self.engine.app.schedule_store(), &queued).await;
        Ok(run_id)
    }

    /// The stored, still declared schedule `name`, read inside `tx`.
    async fn current(
        &self,
        store: &dyn ScheduleStore,
        tx: &mut dyn Transaction,
        name: &str,
    ) -> Result<ScheduleRow, ScheduleOpError> {
        let Some(row) = store.schedule_get(tx, name).await? else {
            return Err(ScheduleOpError::Unknown(name.to_owned()));
        };
        if row.removed_at.is_some() {
            return Err(ScheduleOpError::Removed(name.to_owned()));
        }
        Ok(row)
    }
}
