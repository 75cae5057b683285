//! The housekeeping role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::alert::Alert;
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_core::ports::HousekeepingStore;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::{housekeeping, steps};

crate::columns! {
    /// `HousekeepingSql::dead_alerts`.
    struct DeadColumns { id: String, subscriber: String, last_failure: Option<String> }
    /// `HousekeepingSql::overdue_alerts`.
    struct OverdueColumns { name: String, next_due_at: DateTime<Utc> }
}

#[async_trait]
impl<C: TransactionalStore> HousekeepingStore for SqlStore<C> {
    async fn housekeeping_delete(
        &self,
        tx: &mut dyn Transaction,
        class: RecordClass,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let sql = self.sql.housekeeping;
        let statement = match class {
            RecordClass::IdempotencyKeys => sql.delete_idempotency_keys,
            RecordClass::HandledDeliveries => sql.delete_handled,
            RecordClass::FinishedDeliveries => sql.delete_finished,
            RecordClass::DeadDeliveries => sql.delete_dead,
            RecordClass::OutboxRows => sql.delete_outbox,
            RecordClass::ScheduleRuns => sql.delete_schedule_runs,
            RecordClass::UserSessions => sql.delete_user_sessions,
            RecordClass::SignInRequests => sql.delete_sign_in_requests,
            RecordClass::PasskeyChallenges => sql.delete_passkey_challenges,
            RecordClass::UsedTokens => sql.delete_used_tokens,
            RecordClass::SignInSources => sql.delete_sign_in_sources,
            RecordClass::StepRecords => {
                // The runs' steps first, then the same runs (picked by the same ordered query).
                let steps = self.sql.steps;
                let limit = i64::from(limit);
                let params = steps::DeleteFinishedSteps { cutoff, limit };
                steps.delete_finished_steps.execute(tx, params).await?;
                let params = steps::DeleteFinishedRuns { cutoff, limit };
                return steps.delete_finished_runs.execute(tx, params).await;
            }
            RecordClass::AuditRows
            | RecordClass::FinishedRuns
            | RecordClass::IdleSessions
            | RecordClass::FileBytes
            | RecordClass::OrphanUploads
            | RecordClass::FileTombstones
            | RecordClass::WebhookReceipts => {
                return Err(StoreError::internal(
                    "audit rows, runs, Sessions, files and webhook receipts are deleted by their \
                     own steps, not by class",
                ));
            }
        };
        statement.execute(tx, housekeeping::DeleteOlder { cutoff, limit: limit.into() }).await
    }

    async fn housekeeping_rescue(
        &self,
        tx: &mut dyn Transaction,
        enqueued_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let statement = self.sql.housekeeping.rescue;
        statement
            .execute(tx, housekeeping::Rescue { enqueued_before, limit: i64::from(limit) })
            .await
    }

    async fn housekeeping_dead_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError> {
        let statement = self.sql.housekeeping.dead_alerts;
        let rows =
            statement.query(tx, housekeeping::DeadAlerts { now, limit: i64::from(limit) }).await?;
        rows.iter()
            .map(|r| {
                let dead = DeadColumns::read(r)?;
                Ok(Alert {
                    kind: "delivery.dead",
                    detail: format!(
                        "delivery to subscriber {:?} is dead after its last attempt: {}",
                        dead.subscriber,
                        dead.last_failure.as_deref().unwrap_or("no failure recorded")
                    ),
                    item: dead.id,
                })
            })
            .collect()
    }

    async fn housekeeping_overdue_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        due_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError> {
        let statement = self.sql.housekeeping.overdue_alerts;
        let params = housekeeping::OverdueAlerts { now, due_before, limit: i64::from(limit) };
        let rows = statement.query(tx, params).await?;
        rows.iter()
            .map(|r| {
                let overdue = OverdueColumns::read(r)?;
                Ok(Alert {
                    kind: "schedule.overdue",
                    item: overdue.name,
                    detail: format!(
                        "due at {} and not run since: is the schedule-tick function running?",
                        overdue.next_due_at.to_rfc3339()
                    ),
                })
            })
            .collect()
    }

    async fn housekeeping_complete(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.sql
            .housekeeping
            .complete
            .execute(tx, housekeeping::Complete { name: name.into(), now })
            .await?;
        Ok(())
    }
}
