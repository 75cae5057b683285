//! Housekeeping's vocabulary: the record classes a pass deletes, and the
//! [`HousekeepingStore`] role that deletes, rescues and raises them in bounded batches. The pass
//! itself (retention, batches under the lease) is `jadpo-engine`'s.

use jadpo_schema::placement::Feature;

/// The lease key every store's housekeeping pass shares.
pub const LEASE_KEY: &str = "housekeeping";

/// A class of records with a retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecordClass {
    /// `jadpo_idempotency_keys` past their `expires_at`.
    IdempotencyKeys,
    /// `jadpo_handled_deliveries` older than `handled_retention`.
    HandledDeliveries,
    /// Handled or discarded `jadpo_deliveries` finished longer than `finished_retention` ago.
    FinishedDeliveries,
    /// Dead `jadpo_deliveries` dead longer than `dead_retention` ago.
    DeadDeliveries,
    /// `jadpo_outbox` rows older than `finished_retention` with no delivery left.
    OutboxRows,
    /// `jadpo_schedule_runs` older than `schedule_run_retention`.
    ScheduleRuns,
    /// `jadpo_sessions` ended or past their end: they authenticate nobody, so they go at once.
    UserSessions,
    /// `jadpo_sign_in_requests` whose link and hourly send window are both over.
    SignInRequests,
    /// `jadpo_passkey_challenges` past their `expires_at`: ceremonies nobody finished.
    PasskeyChallenges,
    /// `jadpo_used_tokens` whose token has expired (a replay would be refused as expired).
    UsedTokens,
    /// `jadpo_sign_in_sources` whose hour's window is over.
    SignInSources,
    /// `jadpo_step_records` (with their `jadpo_steps`) finished longer than
    /// `step_record_retention` ago.
    StepRecords,
    /// `jadpo_audit` rows older than their entity's declared retention.
    AuditRows,
    /// Finished workflow runs (with their events, commands and dispatch rows) older than their
    /// workflow's declared retention.
    FinishedRuns,
    /// Sessions idle longer than their declared retention.
    IdleSessions,
    /// Bytes of stored files no field held for the file grace period.
    FileBytes,
    /// Stored bytes no row named (uploads that never finished), older than the upload grace.
    OrphanUploads,
    /// `jadpo_files` rows of deleted files, older than the tombstone retention.
    FileTombstones,
    /// `jadpo_webhook_receipts` older than their source's declared retention.
    WebhookReceipts,
}

impl RecordClass {
    /// Every class with a retention of its own, in the order a pass deletes them (deliveries
    /// before their outbox rows); audit rows follow, per entity.
    pub const ALL: [Self; 12] = [
        Self::IdempotencyKeys,
        Self::HandledDeliveries,
        Self::FinishedDeliveries,
        Self::DeadDeliveries,
        Self::OutboxRows,
        Self::ScheduleRuns,
        Self::UserSessions,
        Self::SignInRequests,
        Self::PasskeyChallenges,
        Self::UsedTokens,
        Self::SignInSources,
        Self::StepRecords,
    ];

    /// The feature whose table it is (a pass touches only those its store holds).
    pub fn feature(self) -> Feature {
        match self {
            Self::IdempotencyKeys
            | Self::HandledDeliveries
            | Self::FinishedDeliveries
            | Self::DeadDeliveries
            | Self::OutboxRows => Feature::Pipeline,
            Self::ScheduleRuns => Feature::Schedules,
            Self::UserSessions
            | Self::SignInRequests
            | Self::PasskeyChallenges
            | Self::UsedTokens
            | Self::SignInSources => Feature::SignIn,
            Self::StepRecords => Feature::StepRecords,
            Self::AuditRows => Feature::Audit,
            Self::FinishedRuns | Self::IdleSessions => Feature::Workflows,
            Self::FileBytes | Self::OrphanUploads | Self::FileTombstones => Feature::Files,
            Self::WebhookReceipts => Feature::Webhooks,
        }
    }

    /// The name in reports and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IdempotencyKeys => "idempotency_keys",
            Self::HandledDeliveries => "handled_deliveries",
            Self::FinishedDeliveries => "finished_deliveries",
            Self::DeadDeliveries => "dead_deliveries",
            Self::OutboxRows => "outbox_rows",
            Self::ScheduleRuns => "schedule_runs",
            Self::UserSessions => "user_sessions",
            Self::SignInRequests => "sign_in_requests",
            Self::PasskeyChallenges => "passkey_challenges",
            Self::UsedTokens => "used_tokens",
            Self::SignInSources => "sign_in_sources",
            Self::StepRecords => "step_records",
            Self::AuditRows => "audit_rows",
            Self::FinishedRuns => "finished_runs",
            Self::IdleSessions => "idle_sessions",
            Self::FileBytes => "file_bytes",
            Self::OrphanUploads => "orphan_uploads",
            Self::FileTombstones => "file_tombstones",
            Self::WebhookReceipts => "webhook_receipts",
        }
    }
}
