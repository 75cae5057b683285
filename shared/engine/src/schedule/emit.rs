//! Recording one schedule run, for the tick pass and for an operator's trigger alike: its event
//! (with its deliveries) and its row, in the caller's transaction; and why a schedule operation
//! did nothing ([`ScheduleOpError`]), which both report.

use chrono::{DateTime, Utc};
use serde_json::json;

use jadpo_application::Emitted;
use jadpo_core::model::delivery::QueuedDelivery;
use jadpo_core::{Store, StoreError, Transaction};
use jadpo_schedule::{NewRun, ScheduleError, ScheduleSpec, Trigger};

use crate::commit::{CommitError, Origin, write_emitted};
use crate::context::Engine;

/// Why a schedule operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleOpError {
    /// No stored schedule has that name.
    #[error("no schedule named {0:?} (`jadpo schedules list` shows them)")]
    Unknown(String),
    /// The schedule is no longer declared by the application.
    #[error("schedule {0:?} was removed from the application; it no longer runs")]
    Removed(String),
    /// Pausing a paused schedule.
    #[error("schedule {0:?} is already paused")]
    AlreadyPaused(String),
    /// Resuming an active schedule.
    #[error("schedule {0:?} is not paused")]
    NotPaused(String),
    /// The timing could not be evaluated.
    #[error(transparent)]
    Timing(#[from] ScheduleError),
    /// The run's event could not be written.
    #[error("the run's event was refused: {0}")]
    Emit(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ScheduleOpError {
    pub(super) fn from_commit(e: CommitError) -> Self {
        match e {
            CommitError::Store(e) => Self::Store(e),
            other => Self::Emit(other.to_string()),
        }
    }
}

/// One run of a schedule to record: which schedule, its id, the tick it stands for, and what
/// triggered it.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunToEmit<'a> {
    pub spec: &'a ScheduleSpec,
    pub id: &'a str,
    pub tick: DateTime<Utc>,
    pub trigger: Trigger,
}

/// Writes `run`'s event and its row inside `tx`, adding its deliveries to `queued`; `false`
/// when that run was already recorded.
pub(super) async fn emit_run(
    engine: &Engine,
    store: &dyn Store,
    tx: &mut dyn Transaction,
    run: RunToEmit<'_>,
    now: DateTime<Utc>,
    queued: &mut Vec<QueuedDelivery>,
) -> Result<bool, ScheduleOpError> {
    let RunToEmit { spec, id, tick, trigger } = run;
    let payload = json!({
        "schedule": spec.name,
        "run_id": id,
        "tick_at": tick.to_rfc3339(),
        "trigger": trigger.as_str(),
        "data": spec.payload,
    });
    let emitted = [Emitted { event_type: spec.event.clone(), payload }];
    let source = format!("schedule:{}", spec.name);
    let origin = Origin {
        source: &source,
        depth: 0,
        request_id: Some(id),
        traceparent: None,
        tracestate: None,
    };
    let (outbox_ids, deliveries) = write_emitted(engine, store, tx, &emitted, &origin, now)
        .await
        .map_err(ScheduleOpError::from_commit)?;
    let run = NewRun {
        id,
        schedule: &spec.name,
        tick_at: tick,
        skipped: None,
        trigger: trigger.as_str(),
        outbox_id: outbox_ids.first().map(String::as_str),
    };
    if !store.schedule_run_insert(tx, &run, now).await? {
        return Ok(false);
    }
    queued.extend(deliveries);
    Ok(true)
}
