//! The housekeeping role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::alert::Alert;
use crate::model::housekeeping::RecordClass;
use crate::ports::HousekeepingStore;
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's housekeeping statements. Each deletes or updates at most `limit` rows, picking
/// them in a subquery (PostgreSQL skips rows a writer holds, so a batch never waits on one).
#[derive(Debug)]
pub struct HousekeepingSql {
    /// `(now, limit)`: expired idempotency keys.
    pub delete_idempotency_keys: &'static str,
    /// `(cutoff, limit)`: handled-delivery records handled before `cutoff`.
    pub delete_handled: &'static str,
    /// `(cutoff, limit)`: handled or discarded deliveries finished before `cutoff`.
    pub delete_finished: &'static str,
    /// `(cutoff, limit)`: dead deliveries dead before `cutoff`.
    pub delete_dead: &'static str,
    /// `(cutoff, limit)`: outbox rows created before `cutoff` with no delivery left.
    pub delete_outbox: &'static str,
    /// `(cutoff, limit)`: schedule runs recorded before `cutoff`.
    pub delete_schedule_runs: &'static str,
    /// `(enqueued_before, limit)`: clear the queue stamp of pending deliveries put on the queue
    /// before `enqueued_before`, so the relay sends them again.
    pub rescue: &'static str,
    /// `(now, limit)` → `id, subscriber, last_failure`: dead deliveries whose alert is not raised,
    /// marking it raised.
    pub dead_alerts: &'static str,
    /// `(now, due_before, limit)` → `name, next_due_at`: active schedules due before
    /// `due_before` whose alert is not raised, marking it raised.
    pub overdue_alerts: &'static str,
    /// `(name, now)`: the pass completed.
    pub complete: &'static str,
}

/// An adapter that speaks housekeeping through its own [`HousekeepingSql`].
pub trait HousekeepingDialect: TransactionalStore {
    /// The adapter's statements.
    fn housekeeping_sql(&self) -> &'static HousekeepingSql;
}

#[async_trait]
impl<S: HousekeepingDialect> HousekeepingStore for S {
    async fn housekeeping_delete(
        &self,
        tx: &mut dyn Transaction,
        class: RecordClass,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let sql = self.housekeeping_sql();
        let statement = match class {
            RecordClass::IdempotencyKeys => sql.delete_idempotency_keys,
            RecordClass::HandledDeliveries => sql.delete_handled,
            RecordClass::FinishedDeliveries => sql.delete_finished,
            RecordClass::DeadDeliveries => sql.delete_dead,
            RecordClass::OutboxRows => sql.delete_outbox,
            RecordClass::ScheduleRuns => sql.delete_schedule_runs,
            RecordClass::AuditRows => {
                return Err(StoreError::internal(
                    "audit rows are deleted per entity (audit_expire)",
                ));
            }
        };
        tx.execute(statement, &[cutoff.into(), i64::from(limit).into()]).await
    }

    async fn housekeeping_rescue(
        &self,
        tx: &mut dyn Transaction,
        enqueued_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        let statement = self.housekeeping_sql().rescue;
        tx.execute(statement, &[enqueued_before.into(), i64::from(limit).into()]).await
    }

    async fn housekeeping_dead_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError> {
        let statement = self.housekeeping_sql().dead_alerts;
        let rows = tx.query(statement, &[now.into(), i64::from(limit).into()]).await?;
        rows.iter()
            .map(|r| {
                Ok(Alert {
                    kind: "delivery.dead",
                    item: r.get_str("id")?.to_owned(),
                    detail: format!(
                        "delivery to subscriber {:?} is dead after its last attempt: {}",
                        r.get_str("subscriber")?,
                        r.get_opt_str("last_failure")?.unwrap_or("no failure recorded")
                    ),
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
        let statement = self.housekeeping_sql().overdue_alerts;
        let params = [now.into(), due_before.into(), i64::from(limit).into()];
        let rows = tx.query(statement, &params).await?;
        rows.iter()
            .map(|r| {
                Ok(Alert {
                    kind: "schedule.overdue",
                    item: r.get_str("name")?.to_owned(),
                    detail: format!(
                        "due at {} and not run since: is the schedule-tick function running?",
                        r.get_timestamp("next_due_at")?.to_rfc3339()
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
        tx.execute(self.housekeeping_sql().complete, &[name.into(), now.into()]).await?;
        Ok(())
    }
}
