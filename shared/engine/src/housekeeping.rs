//! Housekeeping: keeps every system table bounded, rescues stuck work and raises alerts, one
//! pass per store under that store's `jadpo_housekeeping` lease.
//!
//! Each record class has its own retention ([`HousekeepingSettings`]); rows past it are deleted
//! in bounded batches, each batch its own short transaction fenced by the lease's generation, so
//! writers are never blocked for long and a housekeeper that lost its lease stops writing. A
//! second housekeeper finds the lease taken and does nothing. Alerts are structured log events
//! (`alert = "delivery.dead"`, `"schedule.overdue"`, `"breaker.open"`, `"steps.unfinished"`) whose `raised_at` is recorded in the
//! same transaction, so each is raised once.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use jadpo_core::clock::Clock;
use jadpo_core::model::alert::Alert;
use jadpo_core::model::housekeeping::{LEASE_KEY, RecordClass};
use jadpo_core::model::lease::{Lease, LeaseTable};
use jadpo_core::ports::WorkflowOps;
use jadpo_core::{Store, StoreError};
use jadpo_schema::placement::Feature;

use crate::context::Engine;
pub use crate::settings::HousekeepingSettings;
use files::{FileStep, FileWork};

mod files;

impl HousekeepingSettings {
    /// Rows of `class` older than this are deleted at `now`.
    pub fn cutoff(&self, class: RecordClass, now: DateTime<Utc>) -> DateTime<Utc> {
        let s = self;
        let keep = match class {
            RecordClass::IdempotencyKeys
            | RecordClass::UserSessions
            | RecordClass::PasskeyChallenges
            | RecordClass::UsedTokens => Duration::ZERO,
            RecordClass::HandledDeliveries => s.handled_retention,
            RecordClass::FinishedDeliveries | RecordClass::OutboxRows => s.finished_retention,
            RecordClass::DeadDeliveries => s.dead_retention,
            RecordClass::ScheduleRuns => s.schedule_run_retention,
            RecordClass::StepRecords => s.step_record_retention,
            // The send window: a row younger than it still counts its address's sends.
            RecordClass::SignInRequests | RecordClass::SignInSources => {
                jadpo_core::model::sign_in::SEND_WINDOW
            }
            // Per declaration: audited entity, workflow.
            RecordClass::AuditRows
            | RecordClass::FinishedRuns
            | RecordClass::IdleSessions
            | RecordClass::WebhookReceipts => Duration::MAX,
            RecordClass::FileBytes => s.file_grace,
            RecordClass::OrphanUploads => s.upload_grace,
            RecordClass::FileTombstones => s.file_tombstone_retention,
        };
        jadpo_core::clock::before(now, keep)
    }
}

/// What one pass over one store did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HousekeepingReport {
    pub store: String,
    /// Why the pass did nothing (another housekeeper holds the lease), or stopped early (the
    /// lease was lost).
    pub stopped: Option<String>,
    /// Rows deleted per class.
    pub deleted: Vec<(RecordClass, u64)>,
    /// Deliveries put on the queue that never finished, handed back to the relay.
    pub rescued: u64,
    /// Alerts raised.
    pub alerts: Vec<Alert>,
    /// Transactions run.
    pub batches: u64,
}

impl HousekeepingReport {
    /// Rows deleted in all.
    pub fn total_deleted(&self) -> u64 {
        self.deleted.iter().map(|(_, n)| n).sum()
    }
}

/// Why a pass failed (a database fault); what it did so far stays done.
#[derive(Debug, thiserror::Error)]
pub enum HousekeepingError {
    /// The database failed.
    #[error("housekeeping of store {store:?} failed: {source}")]
    Store {
        store: String,
        /// The fault.
        source: StoreError,
    },
}

/// The work of one batch.
#[derive(Debug, Clone, Copy)]
enum Step {
    Delete(RecordClass, DateTime<Utc>),
    /// The audit rows of the `usize`-th audited entity, older than the cutoff.
    Audit(usize, DateTime<Utc>),
    /// The receipts of the `usize`-th webhook source, older than the cutoff.
    Receipts(usize, DateTime<Utc>),
    Rescue(DateTime<Utc>),
    DeadAlerts,
    OverdueAlerts(DateTime<Utc>),
    BreakerAlerts,
    /// Runs first started before this and not finished.
    UnfinishedStepAlerts(DateTime<Utc>),
    /// The `usize`-th retention rule of the workflow tables, for rows last changed before the
    /// cutoff.
    Retain(usize, DateTime<Utc>),
    /// Stored files' bytes and rows.
    Files(FileStep),
}

/// One retention rule over the workflow tables: finished runs of a workflow, idle Sessions
/// bound to a finished run of a workflow, or (`workflow: None`) idle Sessions bound to no run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retain {
    /// [`RecordClass::FinishedRuns`] or [`RecordClass::IdleSessions`].
    pub class: RecordClass,
    /// The workflow whose rows it keeps.
    pub workflow: Option<String>,
    /// How long after their last change.
    pub keep: Duration,
}

impl Retain {
    /// The retention rules the application declares for the workflow tables of store `store`.
    pub fn declared_in(app: &jadpo_application::Application, store: &str) -> Vec<Self> {
        let mut rules = Vec::new();
        let ids: Vec<&str> = app.workflow_ids().collect();
        for id in ids.into_iter().filter(|id| app.workflow(id).is_some_and(|(_, s)| s == store)) {
            let declared = app.workflow_retention(id);
            let of = |class, keep: Option<Duration>| {
                keep.map(|keep| Self { class, workflow: Some(id.to_owned()), keep })
            };
            rules.extend(of(RecordClass::FinishedRuns, declared.finished_runs));
            rules.extend(of(RecordClass::IdleSessions, declared.idle_sessions));
        }
        if let Some(keep) = app.unbound_session_retention() {
            if app.workflow_stores().contains(&store) {
                rules.push(Self { class: RecordClass::IdleSessions, workflow: None, keep });
            }
        }
        rules
    }
}

impl Step {
    /// The feature whose tables it reads and writes: a store without it skips the step.
    fn feature(self) -> Feature {
        match self {
            Self::Delete(class, _) => class.feature(),
            Self::Audit(..) => Feature::Audit,
            Self::Receipts(..) => Feature::Webhooks,
            Self::Rescue(_) | Self::DeadAlerts | Self::BreakerAlerts => Feature::Pipeline,
            Self::OverdueAlerts(_) => Feature::Schedules,
            Self::UnfinishedStepAlerts(_) => Feature::StepRecords,
            Self::Retain(..) => Feature::Workflows,
            Self::Files(_) => Feature::Files,
        }
    }
}

/// One pass over `store` as `owner`. `rescue_after`: how long after being put on the queue an
/// unfinished delivery is handed back to the relay (the engine's redelivery window).
/// `audit`: the audited entities in this store with their retention.
pub async fn housekeep(
    store: &dyn Store,
    clock: &dyn Clock,
    settings: &HousekeepingSettings,
    rescue_after: Duration,
    audit: &[(String, Duration)],
    owner: &str,
) -> Result<HousekeepingReport, HousekeepingError> {
    let pass = Pass {
        settings,
        rescue_after: Some(rescue_after),
        audit,
        receipts: &[],
        retain: &[],
        features: None,
        files: None,
    };
    run_pass(store, clock, &pass, owner).await
}

/// What one store's pass does: [`housekeep`]'s arguments, with `rescue_after: None` handing
/// nothing back to the relay, and `features` the features whose tables the store holds
/// (`None`: every feature).
struct Pass<'a> {
    settings: &'a HousekeepingSettings,
    rescue_after: Option<Duration>,
    audit: &'a [(String, Duration)],
    /// The webhook sources whose receipts the store keeps, with their retention.
    receipts: &'a [(String, Duration)],
    /// The retention rules of the store's workflow tables.
    retain: &'a [Retain],
    features: Option<BTreeSet<Feature>>,
    /// The blob storage and the stores keeping files (`None`: no file steps run).
    files: Option<FileWork<'a>>,
}

async fn run_pass(
    store: &dyn Store,
    clock: &dyn Clock,
    pass: &Pass<'_>,
    owner: &str,
) -> Result<HousekeepingReport, HousekeepingError> {
    let Pass { settings, rescue_after, audit, retain, .. } = *pass;
    let fail = |source| HousekeepingError::Store { store: store.name().to_owned(), source };
    let mut report = HousekeepingReport { store: store.name().to_owned(), ..Default::default() };
    let start = clock.now();
    let ttl =
        chrono::Duration::from_std(settings.lease_ttl).unwrap_or(chrono::Duration::minutes(5));
    let taken = store.lease_take(LeaseTable::Housekeeping, LEASE_KEY, owner, start, ttl).await;
    let Some(mut lease) = taken.map_err(fail)? else {
        report.stopped = Some("another housekeeper holds the lease; this pass did nothing".into());
        return Ok(report);
    };
    let mut steps: Vec<Step> =
        RecordClass::ALL.iter().map(|c| Step::Delete(*c, settings.cutoff(*c, start))).collect();
    steps.extend(
        audit
            .iter()
            .enumerate()
            .map(|(i, (_, keep))| Step::Audit(i, jadpo_core::clock::before(start, *keep))),
    );
    steps.extend(
        pass.receipts
            .iter()
            .enumerate()
            .map(|(i, (_, keep))| Step::Receipts(i, jadpo_core::clock::before(start, *keep))),
    );
    steps.extend(
        retain
            .iter()
            .enumerate()
            .map(|(i, rule)| Step::Retain(i, jadpo_core::clock::before(start, rule.keep))),
    );
    let rescue_before = rescue_after.map(|after| jadpo_core::clock::before(start, after));
    let overdue_before = jadpo_core::clock::before(start, settings.overdue_after);
    let unfinished_before = jadpo_core::clock::before(start, settings.unfinished_steps_after);
    steps.extend(rescue_before.map(Step::Rescue));
    if pass.files.is_some() {
        // Claimed files left by a killed pass first, then this pass's claims.
        let cutoff = |class| settings.cutoff(class, start);
        steps.extend([
            Step::Files(FileStep::Deleting),
            Step::Files(FileStep::Unheld),
            Step::Files(FileStep::Claim(cutoff(RecordClass::FileBytes))),
            Step::Files(FileStep::Orphans(cutoff(RecordClass::OrphanUploads))),
            Step::Files(FileStep::Tombstones(cutoff(RecordClass::FileTombstones))),
        ]);
    }
    steps.extend([
        Step::DeadAlerts,
        Step::OverdueAlerts(overdue_before),
        Step::BreakerAlerts,
        Step::UnfinishedStepAlerts(unfinished_before),
    ]);
    steps.retain(|step| pass.features.as_ref().is_none_or(|f| f.contains(&step.feature())));
    let mut held = true;
    for step in steps {
        held = run_step(store, clock, pass, &mut lease, step, &mut report).await.map_err(fail)?;
        if !held {
            break;
        }
    }
    if held {
        held = complete(store, clock, &lease).await.map_err(fail)?;
    }
    if !held {
        report.stopped =
            Some("the lease was lost to another housekeeper; this pass stopped".into());
    } else if let Err(e) = store.lease_give_up(&lease).await {
        tracing::warn!(store = store.name(), error = %e, "could not give the housekeeping lease up; it expires on its own");
    }
    Ok(report)
}

/// The webhook sources whose receipts `store` keeps (those feeding an action there), with each
/// one's retention.
fn receipts_in(app: &jadpo_application::Application, store: &str) -> Vec<(String, Duration)> {
    let here = |w: &&jadpo_application::WebhookSource| {
        app.action(&w.action).is_some_and(|a| a.store == store)
    };
    app.webhooks().filter(here).map(|w| (w.name.clone(), w.retention)).collect()
}

/// One pass over every store of `engine`, one after the other; a store that fails does not stop the
/// others. Returns each store's report and each failure.
pub async fn housekeep_all(
    engine: &Engine,
    owner: &str,
) -> (Vec<HousekeepingReport>, Vec<HousekeepingError>) {
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    // While the queue holds messages, unfinished deliveries may be waiting in it: the relay
    // re-sends only what the queue's depth cannot account for, and nothing is handed back here.
    let rescue_after = match engine.queue.backlog().await {
        Ok(Some(n)) if n > 0 => None,
        _ => Some(engine.settings.redelivery_after),
    };
    let file_stores: Vec<&dyn Store> = engine
        .app
        .feature_stores(Feature::Files)
        .iter()
        .filter_map(|name| engine.stores.get(*name).map(|s| s.as_ref()))
        .collect();
    for store in engine.stores.values() {
        let settings = &engine.settings.housekeeping;
        let audit: Vec<(String, Duration)> = engine
            .app
            .audited_in(store.name())
            .iter()
            .map(|a| (a.entity.clone(), a.retention))
            .collect();
        let clock = engine.clock.as_ref();
        let features = Some(engine.app.store_features(store.name()));
        let retain = Retain::declared_in(&engine.app, store.name());
        let receipts = receipts_in(&engine.app, store.name());
        let files = engine.blobs.as_deref().map(|blobs| FileWork { blobs, stores: &file_stores });
        let pass = Pass {
            settings,
            rescue_after,
            audit: &audit,
            receipts: &receipts,
            retain: &retain,
            features,
            files,
        };
        match run_pass(store.as_ref(), clock, &pass, owner).await {
            Ok(report) => reports.push(report),
            Err(e) => failures.push(e),
        }
    }
    (reports, failures)
}

impl HousekeepingReport {
    /// The report as JSON (the function's response, the local log).
    pub fn to_json(&self) -> serde_json::Value {
        let deleted: serde_json::Map<String, serde_json::Value> =
            self.deleted.iter().map(|(c, n)| (c.as_str().to_owned(), (*n).into())).collect();
        let alerts: Vec<serde_json::Value> = self
            .alerts
            .iter()
            .map(|a| serde_json::json!({"alert": a.kind, "item": a.item, "detail": a.detail}))
            .collect();
        serde_json::json!({
            "store": self.store,
            "stopped": self.stopped,
            "deleted": deleted,
            "rescued": self.rescued,
            "alerts": alerts,
            "batches": self.batches,
        })
    }
}

/// Runs `step` in batches until it has nothing left, the batch budget is spent, or the lease is
/// lost (`false`).
async fn run_step(
    store: &dyn Store,
    clock: &dyn Clock,
    pass: &Pass<'_>,
    lease: &mut Lease,
    step: Step,
    report: &mut HousekeepingReport,
) -> Result<bool, StoreError> {
    let Pass { settings, audit, retain, .. } = *pass;
    let limit = settings.batch_size.max(1);
    let mut cursor = None;
    let ttl =
        chrono::Duration::from_std(settings.lease_ttl).unwrap_or(chrono::Duration::minutes(5));
    for _ in 0..settings.max_batches.max(1) {
        crate::fault!("housekeeping.before_batch");
        let now = clock.now();
        let mut tx = store.begin().await?;
        if !store.lease_fence(tx.as_mut(), lease, now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        let mut to_delete = Vec::new();
        let mut more = None;
        let (touched, alerts) = match step {
            Step::Files(file_step) => match &pass.files {
                Some(work) => {
                    let context = (now, limit, settings.orphan_window);
                    let b = files::batch(store, work, tx.as_mut(), file_step, context, &mut cursor)
                        .await?;
                    (to_delete, more) = (b.to_delete, Some(b.more));
                    (b.touched, Vec::new())
                }
                None => (0, Vec::new()),
            },
            Step::Delete(class, cutoff) => {
                (store.housekeeping_delete(tx.as_mut(), class, cutoff, limit).await?, Vec::new())
            }
            Step::Audit(i, cutoff) => {
                let entity = audit.get(i).map_or("", |(e, _)| e.as_str());
                (store.audit_expire(tx.as_mut(), entity, cutoff, limit).await?, Vec::new())
            }
            Step::Receipts(i, cutoff) => match pass.receipts.get(i) {
                Some((source, _)) => {
                    (store.receipts_expire(tx.as_mut(), source, cutoff, limit).await?, Vec::new())
                }
                None => (0, Vec::new()),
            },
            Step::Retain(i, cutoff) => match retain.get(i) {
                Some(rule) => {
                    (retain_batch(store, tx.as_mut(), rule, cutoff, limit, now).await?, Vec::new())
                }
                None => (0, Vec::new()),
            },
            Step::Rescue(before) => {
                (store.housekeeping_rescue(tx.as_mut(), before, limit).await?, Vec::new())
            }
            Step::DeadAlerts => {
                let alerts = store.housekeeping_dead_alerts(tx.as_mut(), now, limit).await?;
                (alerts.len() as u64, alerts)
            }
            Step::BreakerAlerts => {
                let alerts = store.breaker_alerts(tx.as_mut(), now, limit).await?;
                (alerts.len() as u64, alerts)
            }
            Step::OverdueAlerts(before) => {
                let alerts =
                    store.housekeeping_overdue_alerts(tx.as_mut(), now, before, limit).await?;
                (alerts.len() as u64, alerts)
            }
            Step::UnfinishedStepAlerts(before) => {
                let alerts = store.step_unfinished_alerts(tx.as_mut(), before, now, limit).await?;
                (alerts.len() as u64, alerts)
            }
        };
        crate::fault!("housekeeping.before_batch_commit");
        tx.commit().await?;
        crate::fault!("housekeeping.after_batch_commit");
        report.batches += 1;
        let touched = match &pass.files {
            Some(work) if !to_delete.is_empty() => {
                files::delete_bytes(store, work, &to_delete, clock.now()).await?
            }
            _ => touched,
        };
        let retained = match step {
            Step::Retain(i, _) => retain.get(i).map(|rule| rule.class),
            _ => None,
        };
        record(report, step, retained, touched, alerts, store.name());
        if !more.unwrap_or(touched >= u64::from(limit)) {
            return Ok(true);
        }
        match store.lease_extend(lease, clock.now(), ttl).await? {
            Some(renewed) => *lease = renewed,
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Deletes, inside `tx`, at most `limit` rows that `rule` no longer keeps at `cutoff`: finished
/// runs with their events, commands and dispatch rows (unbinding their Sessions), or idle
/// Sessions. Returns how many.
async fn retain_batch(
    store: &dyn WorkflowOps,
    tx: &mut dyn jadpo_core::Transaction,
    rule: &Retain,
    cutoff: DateTime<Utc>,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let workflow = rule.workflow.as_deref();
    let mut deleted = 0;
    if rule.class == RecordClass::FinishedRuns {
        let id = workflow.unwrap_or_default();
        for run in store.executions_finished_before(tx, id, cutoff, limit).await? {
            deleted += u64::from(store.execution_delete_in(tx, &run, now).await?.is_some());
        }
    } else {
        for session in store.sessions_idle_before(tx, workflow, cutoff, limit).await? {
            deleted += u64::from(store.session_delete_in(tx, &session).await?);
        }
    }
    Ok(deleted)
}

fn record(
    report: &mut HousekeepingReport,
    step: Step,
    retained: Option<RecordClass>,
    touched: u64,
    alerts: Vec<Alert>,
    store: &str,
) {
    let deleted = match (step, retained) {
        (Step::Audit(..), _) => Some(RecordClass::AuditRows),
        (Step::Receipts(..), _) => Some(RecordClass::WebhookReceipts),
        (Step::Files(FileStep::Deleting | FileStep::Claim(_)), _) => Some(RecordClass::FileBytes),
        (Step::Files(FileStep::Orphans(_)), _) => Some(RecordClass::OrphanUploads),
        (Step::Files(FileStep::Tombstones(_)), _) => Some(RecordClass::FileTombstones),
        (Step::Files(FileStep::Unheld), _) => None,
        (Step::Delete(class, _), _) | (Step::Retain(..), Some(class)) => Some(class),
        _ => None,
    };
    match step {
        Step::Audit(..)
        | Step::Receipts(..)
        | Step::Delete(..)
        | Step::Retain(..)
        | Step::Files(_) => {
            let Some(class) = deleted else { return };
            match report.deleted.iter_mut().find(|(c, _)| *c == class) {
                Some((_, n)) => *n += touched,
                None => report.deleted.push((class, touched)),
            }
        }
        Step::Rescue(_) => {
            if touched > 0 {
                tracing::warn!(
                    store,
                    rescued = touched,
                    "deliveries put on the queue never finished; handed back to the relay"
                );
            }
            report.rescued += touched;
        }
        Step::DeadAlerts
        | Step::OverdueAlerts(_)
        | Step::BreakerAlerts
        | Step::UnfinishedStepAlerts(_) => {
            for alert in &alerts {
                tracing::error!(alert = alert.kind, store, item = %alert.item, detail = %alert.detail, "alert raised");
            }
            report.alerts.extend(alerts);
        }
    }
}

/// Records the completed pass under the lease; `false` when the lease was lost.
async fn complete(store: &dyn Store, clock: &dyn Clock, lease: &Lease) -> Result<bool, StoreError> {
    let now = clock.now();
    let mut tx = store.begin().await?;
    if !store.lease_fence(tx.as_mut(), lease, now).await? {
        tx.rollback().await?;
        return Ok(false);
    }
    store.housekeeping_complete(tx.as_mut(), LEASE_KEY, now).await?;
    tx.commit().await?;
    Ok(true)
}

#[cfg(test)]
mod tests;
