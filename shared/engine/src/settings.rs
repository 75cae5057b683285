//! The engine's limits as plain data, each with its default written once here. The runtime's
//! configuration reads them from the environment and validates them at start.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::sealing::SealingKeys;

/// The engine's limits, validated by the runtime's configuration.
#[derive(Debug, Clone, Copy)]
pub struct EngineSettings {
    /// Deepest chain of events a subscriber may extend (0 is an event emitted by a request).
    pub max_chain_depth: u32,
    /// How long an idempotency key's stored response is replayed.
    pub idempotency_retention: Duration,
    /// How long after a delivery was put on the queue the relay assumes the message was lost
    /// and sends it again (longer than the queue's visibility timeout times its receive count).
    pub redelivery_after: Duration,
    /// Deliveries claimed per relay batch.
    pub relay_batch: usize,
    /// How long a due, never-sent delivery is left to the send right after its commit (which
    /// marks it sent) before the relay's sweep takes it: without it, a sweep racing that send
    /// puts a second message for the same delivery on the queue.
    pub relay_grace: Duration,
    /// The queue's depth at which a commit is refused (`503` with `Retry-After`) until the
    /// delivery side catches up; 0 admits every commit.
    pub max_backlog: u64,
    /// Tick passes.
    pub schedules: ScheduleSettings,
    /// Housekeeping passes.
    pub housekeeping: HousekeepingSettings,
    /// Sign-in by email: sends per hour, wrong codes, a link's lifetime.
    pub sign_in: jadpo_core::model::sign_in::SignInLimits,
    /// Browser sessions' idle and absolute limits.
    pub browser_sessions: jadpo_core::model::user_session::BrowserLimits,
    /// Runs that make changing calls.
    pub steps: StepSettings,
    /// Workflow commands' executors.
    pub workflows: WorkflowSettings,
    /// How long a connection's breaker this process last saw closed with no failures is
    /// trusted to be so without reading its row again (0 reads it for every delivery).
    pub breaker_trusted_for: Duration,
    /// How long before its invocation's deadline a deployed relay pass stops starting batches, so
    /// that the last batch's sends and marks finish inside the invocation.
    pub relay_margin: Duration,
    /// How many files, and bytes, each user may keep uploaded (services have no limit).
    pub upload_quota: jadpo_core::model::file_field::Quota,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            max_chain_depth: 8,
            idempotency_retention: Duration::from_secs(24 * 3600),
            redelivery_after: Duration::from_secs(15 * 60),
            relay_batch: 100,
            relay_grace: Duration::from_secs(2),
            max_backlog: 50_000,
            schedules: ScheduleSettings::default(),
            housekeeping: HousekeepingSettings::default(),
            sign_in: jadpo_core::model::sign_in::SignInLimits::default(),
            browser_sessions: jadpo_core::model::user_session::BrowserLimits::default(),
            steps: StepSettings::default(),
            workflows: WorkflowSettings::default(),
            breaker_trusted_for: Duration::from_secs(1),
            upload_quota: jadpo_core::model::file_field::Quota::default(),
            relay_margin: Duration::from_secs(2),
        }
    }
}

/// How a workflow command's executor holds its run.
#[derive(Debug, Clone, Copy)]
pub struct WorkflowSettings {
    /// How long the run's lease lasts unrenewed; the executor renews it every third of this
    /// while the capability runs, so a holder that stops is taken over this long after.
    pub run_lease: Duration,
    /// The longest a capability may run: past it, the command fails with a message saying so
    /// (the run follows the node's failure path) and the lease is no longer renewed.
    pub capability_deadline: Duration,
}

impl Default for WorkflowSettings {
    fn default() -> Self {
        Self { run_lease: Duration::from_secs(60), capability_deadline: Duration::from_secs(300) }
    }
}

/// Limits of runs that make changing calls.
#[derive(Debug, Clone, Copy)]
pub struct StepSettings {
    /// How long a runner holds a run without recording a step (renewed at each step); a
    /// function with a deadline holds it until the deadline at most, so a run left by a
    /// function that timed out is taken over as soon as the deadline passes.
    pub lease: Duration,
    /// The longest one call may take (the connections' timeout): a call is not started unless
    /// this and [`deadline_margin`](Self::deadline_margin) fit before the deadline.
    pub call_budget: Duration,
    /// Time kept free before a deadline to record an answer and commit.
    pub deadline_margin: Duration,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(120),
            call_budget: Duration::from_secs(10),
            deadline_margin: Duration::from_secs(2),
        }
    }
}

/// Retention per record class and the pass's limits. Every duration is validated by the
/// runtime's configuration (see docs/operations.md for the variables).
#[derive(Debug, Clone, Copy)]
pub struct HousekeepingSettings {
    /// How long a pass holds the lease without renewing it; renewed after every batch.
    pub lease_ttl: Duration,
    /// Most rows one batch (one transaction) touches.
    pub batch_size: u32,
    /// Most batches per record class per pass; the next pass continues.
    pub max_batches: u32,
    /// Handled-delivery records are kept this long (at least the longest redelivery window, so
    /// a late duplicate message still finds its record).
    pub handled_retention: Duration,
    /// Handled and discarded deliveries, and then their outbox rows, are kept this long after
    /// they finished.
    pub finished_retention: Duration,
    /// Dead deliveries are kept this long after they died, for operators to inspect.
    pub dead_retention: Duration,
    /// Schedule runs and skipped ticks are kept this long.
    pub schedule_run_retention: Duration,
    /// A schedule due longer ago than this raises the `schedule.overdue` alert.
    pub overdue_after: Duration,
    /// Finished step records (and their steps) are kept this long.
    pub step_record_retention: Duration,
    /// A run unfinished this long after its first start raises the `steps.unfinished` alert.
    pub unfinished_steps_after: Duration,
    /// A stored file no field holds has its bytes deleted this long after housekeeping first
    /// saw it so (a new reference meanwhile starts it over).
    pub file_grace: Duration,
    /// Stored bytes that no row names (an upload that never finished) are deleted once this old.
    pub upload_grace: Duration,
    /// How far back before `upload_grace` each pass looks for such bytes (file ids are
    /// time-ordered, so a pass lists only the uploads of this window).
    pub orphan_window: Duration,
    /// A deleted file's row is kept this long, so that a stale reference to it is refused.
    pub file_tombstone_retention: Duration,
}

impl Default for HousekeepingSettings {
    fn default() -> Self {
        let day = 24 * 3600;
        Self {
            lease_ttl: Duration::from_secs(300),
            batch_size: 1000,
            max_batches: 1000,
            handled_retention: Duration::from_secs(14 * day),
            finished_retention: Duration::from_secs(7 * day),
            dead_retention: Duration::from_secs(30 * day),
            schedule_run_retention: Duration::from_secs(30 * day),
            overdue_after: Duration::from_secs(600),
            step_record_retention: Duration::from_secs(7 * day),
            unfinished_steps_after: Duration::from_secs(3600),
            file_grace: Duration::from_secs(day),
            upload_grace: Duration::from_secs(3600),
            orphan_window: Duration::from_secs(7 * day),
            file_tombstone_retention: Duration::from_secs(30 * day),
        }
    }
}

/// Limits of tick passes, validated by the runtime's configuration.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleSettings {
    /// How long a pass holds a schedule's lease (longer than one schedule's transaction).
    pub lease_ttl: std::time::Duration,
    /// Most ticks one pass records for a schedule after a gap; older ones are summarized.
    pub max_listed_ticks: usize,
    /// Most due schedules one pass handles.
    pub due_batch: u32,
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        Self {
            lease_ttl: std::time::Duration::from_secs(60),
            max_listed_ticks: 100,
            due_batch: 100,
        }
    }
}

/// What a run needs beyond the engine's stores: the sealing keys, the build's name and the
/// invocation's deadline.
#[derive(Debug, Clone)]
pub struct RunEnv {
    /// The keys step answers are sealed under (`None`: a changing call fails with a clear error).
    pub sealing: Option<Arc<SealingKeys>>,
    /// The build running (kept on a run's record from its first start).
    pub build: Arc<str>,
    /// When this invocation must have returned (a Lambda's deadline); `None` locally.
    pub deadline: Option<DateTime<Utc>>,
}

impl Default for RunEnv {
    fn default() -> Self {
        Self { sealing: None, build: Arc::from(env!("CARGO_PKG_VERSION")), deadline: None }
    }
}

impl RunEnv {
    /// A run environment whose sealing keys are one fresh random key, gone with the process
    /// (tests and benchmarks).
    pub fn ephemeral() -> Self {
        let sealing = SealingKeys::generate("ephemeral")
            .and_then(|ring| SealingKeys::parse(&ring))
            .ok()
            .map(Arc::new);
        Self { sealing, ..Self::default() }
    }
}
