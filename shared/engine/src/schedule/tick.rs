//! One tick pass: bring the stored schedules in line with the declaration, then, under each due
//! schedule's lease, record its runs and skipped ticks in one fenced transaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;

use jadpo_core::commit_or_rollback;
use jadpo_core::model::delivery::QueuedDelivery;
use jadpo_core::model::lease::{Lease, LeaseTable};
use jadpo_core::ports::ScheduleStore;
use jadpo_core::{Store, Transaction};
use jadpo_schedule::{
    NewRun, NewSchedule, Overlap, ScheduleSpec, Trigger, decide, due_ticks, tick_id,
};

use super::emit::{RunToEmit, ScheduleOpError, emit_run};
use crate::context::Engine;
use crate::relay::enqueue_now;

/// What a tick pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Runs recorded (their ids).
    pub runs: Vec<String>,
    /// Skipped ticks recorded: id and reason.
    pub skipped: Vec<(String, String)>,
    /// Due schedules whose lease another pass holds.
    pub busy: Vec<String>,
    /// Schedules whose lease was lost before the write (another pass took over).
    pub lost: Vec<String>,
    /// Schedules another pass had already advanced.
    pub already_done: Vec<String>,
    /// Schedules first stored by this pass.
    pub created: u64,
    /// Schedules marked removed by this pass (no longer declared).
    pub removed: u64,
}

impl TickReport {
    /// The report as JSON (the function's response, the local log).
    pub fn to_json(&self) -> serde_json::Value {
        let skipped: Vec<serde_json::Value> =
            self.skipped.iter().map(|(id, why)| json!({"id": id, "reason": why})).collect();
        json!({
            "runs": self.runs,
            "skipped": skipped,
            "busy": self.busy,
            "lost": self.lost,
            "already_done": self.already_done,
            "created": self.created,
            "removed": self.removed,
        })
    }

    /// Whether the pass recorded or changed anything worth a log line.
    pub fn is_quiet(&self) -> bool {
        self.runs.is_empty()
            && self.skipped.is_empty()
            && self.lost.is_empty()
            && self.created == 0
            && self.removed == 0
    }
}

/// What recording one schedule's ticks came to.
enum Recorded {
    Lost,
    NotDue,
    Duplicate,
    Done { runs: Vec<String>, skipped: Vec<(String, String)>, queued: Vec<QueuedDelivery> },
}

/// One pass over the schedule store, holding leases as `owner`.
pub async fn tick(engine: &Engine, owner: &str) -> Result<TickReport, ScheduleOpError> {
    let store = Arc::clone(engine.store(engine.app.schedule_store())?);
    let now = engine.clock.now();
    let mut report = TickReport::default();
    sync_into(engine, store.as_ref(), now, &mut report).await?;
    let settings = engine.settings.schedules;
    for name in store.schedules_due(now, settings.due_batch).await? {
        let Some(spec) = engine.app.schedule(&name) else { continue };
        tick_one(engine, &store, spec, owner, now, &mut report).await?;
    }
    Ok(report)
}

/// Brings the stored schedules in line with the declaration (what every tick pass does first):
/// returns how many were created and how many marked removed.
pub async fn sync(engine: &Engine) -> Result<(u64, u64), ScheduleOpError> {
    let store = Arc::clone(engine.store(engine.app.schedule_store())?);
    let mut report = TickReport::default();
    sync_into(engine, store.as_ref(), engine.clock.now(), &mut report).await?;
    Ok((report.created, report.removed))
}

/// Stores newly declared schedules (first due at their next tick), records changed expressions
/// (in force after the stored next due time), and marks undeclared schedules removed.
async fn sync_into(
    engine: &Engine,
    store: &dyn ScheduleStore,
    now: DateTime<Utc>,
    report: &mut TickReport,
) -> Result<(), ScheduleOpError> {
    let stored: BTreeMap<String, _> =
        store.schedules_list().await?.into_iter().map(|s| (s.name.clone(), s)).collect();
    for spec in engine.app.schedules() {
        let expression = spec.when.describe();
        let declared = NewSchedule {
            name: &spec.name,
            expression: &expression,
            event_type: &spec.event,
            next_due_at: spec.when.next_after(now)?,
        };
        match stored.get(&spec.name) {
            None => report.created += u64::from(store.schedule_insert(&declared, now).await?),
            Some(row) => {
                if row.removed_at.is_some() {
                    store.schedule_restore(&spec.name, declared.next_due_at, now).await?;
                }
                if row.expression != expression || row.event_type != spec.event {
                    store.schedule_redeclare(&declared, now).await?;
                }
            }
        }
    }
    let names: Vec<String> = engine.app.schedules().map(|s| s.name.clone()).collect();
    report.removed = store.schedules_mark_removed(&names, now).await?;
    Ok(())
}

async fn tick_one(
    engine: &Engine,
    store: &Arc<dyn Store>,
    spec: &ScheduleSpec,
    owner: &str,
    now: DateTime<Utc>,
    report: &mut TickReport,
) -> Result<(), ScheduleOpError> {
    let ttl = chrono::Duration::from_std(engine.settings.schedules.lease_ttl)
        .unwrap_or(chrono::Duration::seconds(60));
    let Some(lease) = store.lease_take(LeaseTable::Schedules, &spec.name, owner, now, ttl).await?
    else {
        report.busy.push(spec.name.clone());
        return Ok(());
    };
    crate::fault!("tick.after_lease");
    let mut tx = store.begin().await?;
    let result = async {
        let recorded = record(engine, store.as_ref(), tx.as_mut(), spec, &lease, now).await?;
        crate::fault!("tick.before_commit");
        Ok::<_, ScheduleOpError>(recorded)
    }
    .await;
    let recorded = commit_or_rollback(tx, result).await;
    if recorded.is_ok() {
        crate::fault!("tick.after_commit");
    }
    if let Err(e) = store.lease_give_up(&lease).await {
        tracing::warn!(schedule = %spec.name, error = %e, "could not give the schedule's lease up; it expires on its own");
    }
    match recorded? {
        Recorded::Lost => report.lost.push(spec.name.clone()),
        Recorded::NotDue | Recorded::Duplicate => report.already_done.push(spec.name.clone()),
        Recorded::Done { runs, skipped, queued } => {
            for (id, reason) in &skipped {
                tracing::info!(schedule = %spec.name, tick = %id, %reason, "schedule tick skipped");
            }
            for id in &runs {
                tracing::info!(schedule = %spec.name, run = %id, "schedule run recorded");
            }
            report.runs.extend(runs);
            report.skipped.extend(skipped);
            enqueue_now(engine, engine.app.schedule_store(), &queued).await;
        }
    }
    Ok(())
}

/// Inside `tx`: fence, read, decide, record, emit, advance.
async fn record(
    engine: &Engine,
    store: &dyn Store,
    tx: &mut dyn Transaction,
    spec: &ScheduleSpec,
    lease: &Lease,
    now: DateTime<Utc>,
) -> Result<Recorded, ScheduleOpError> {
    if !store.lease_fence(tx, lease, now).await? {
        return Ok(Recorded::Lost);
    }
    let Some(row) = store.schedule_get(tx, &spec.name).await? else {
        return Ok(Recorded::NotDue);
    };
    let cap = engine.settings.schedules.max_listed_ticks;
    let Some(due) = due_ticks(&spec.when, row.next_due_at, now, cap)? else {
        return Ok(Recorded::NotDue);
    };
    let unfinished = match (spec.overlap, &row.last_run_id) {
        (Overlap::Skip, Some(run)) => {
            let n = store.schedule_run_unfinished(tx, run).await?;
            (n > 0).then(|| format!("the previous run {run} has {n} unfinished deliveries"))
        }
        _ => None,
    };
    let decision = decide(&due, spec.catch_up, row.paused_at.is_some(), unfinished.as_deref());
    let mut skipped = Vec::new();
    for (tick, reason) in &decision.skipped {
        let id = tick_id(&spec.name, *tick);
        let run = NewRun {
            id: &id,
            schedule: &spec.name,
            tick_at: *tick,
            skipped: Some(reason),
            trigger: Trigger::Due.as_str(),
            outbox_id: None,
        };
        if !store.schedule_run_insert(tx, &run, now).await? {
            return Ok(Recorded::Duplicate);
        }
        skipped.push((id, reason.clone()));
    }
    let mut runs = Vec::new();
    let mut queued = Vec::new();
    for (tick, trigger) in &decision.runs {
        let id = tick_id(&spec.name, *tick);
        let run = RunToEmit { spec, id: &id, tick: *tick, trigger: *trigger };
        if !emit_run(engine, store, tx, run, now, &mut queued).await? {
            return Ok(Recorded::Duplicate);
        }
        runs.push(id);
    }
    let last_tick = due.ticks.last().copied().unwrap_or(row.next_due_at);
    store
        .schedule_advance(
            tx,
            &spec.name,
            due.next_due,
            last_tick,
            runs.last().map(String::as_str),
            now,
        )
        .await?;
    Ok(Recorded::Done { runs, skipped, queued })
}
