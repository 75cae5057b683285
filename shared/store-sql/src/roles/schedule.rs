//! The schedule role implemented once over each adapter's own SQL, as the pipeline role is.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::operator::{ActionFilter, StoredAction};
use jadpo_core::ports::ScheduleStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};
use jadpo_schedule::NewRun;
use jadpo_schedule::NewSchedule;
use jadpo_schedule::{ScheduleRow, ScheduleRun};

use crate::store::SqlStore;
use crate::tables::schedule;

crate::columns! {
    /// A schedule's name (`ScheduleSql::due`).
    struct Name { name: String }
    /// `ScheduleSql::unfinished`.
    struct Unfinished { unfinished: i64 }
    /// `ScheduleSql::current_role`.
    struct Role { role: String }
}

fn schedule_row(r: &Row) -> Result<ScheduleRow, StoreError> {
    crate::read_row!(r => ScheduleRow {
        name, expression, event_type, next_due_at, last_tick_at, last_run_id, paused_at,
        removed_at, lease_owner, lease_expires_at,
    })
}

fn run_row(r: &Row) -> Result<ScheduleRun, StoreError> {
    crate::read_row!(r => ScheduleRun {
        id, schedule, tick_at, status, trigger, reason, outbox_id, recorded_at,
    })
}

fn action_row(r: &Row) -> Result<StoredAction, StoreError> {
    crate::read_row!(r => StoredAction {
        id, acted_at, action, item_kind, item, item_state, operator, db_role, detail, os_account,
    })
}

#[async_trait]
impl<C: TransactionalStore> ScheduleStore for SqlStore<C> {
    async fn schedules_list(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        self.sql
            .schedule
            .list
            .query_once(self, schedule::List {})
            .await?
            .iter()
            .map(schedule_row)
            .collect()
    }

    async fn schedule_get(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
    ) -> Result<Option<ScheduleRow>, StoreError> {
        self.sql
            .schedule
            .get
            .query_opt(tx, schedule::Get { name: name.into() })
            .await?
            .as_ref()
            .map(schedule_row)
            .transpose()
    }

    async fn schedule_insert(
        &self,
        s: &NewSchedule<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = schedule::Insert {
            name: s.name.into(),
            expression: s.expression.into(),
            event_type: s.event_type.into(),
            next_due_at: s.next_due_at,
            now,
        };
        Ok(self.sql.schedule.insert.execute_once(self, params).await? == 1)
    }

    async fn schedule_redeclare(
        &self,
        s: &NewSchedule<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = schedule::Redeclare {
            name: s.name.into(),
            expression: s.expression.into(),
            event_type: s.event_type.into(),
            now,
        };
        Ok(self.sql.schedule.redeclare.execute_once(self, params).await? == 1)
    }

    async fn schedule_restore(
        &self,
        name: &str,
        next_due_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = schedule::Restore { name: name.into(), next_due_at, now };
        Ok(self.sql.schedule.restore.execute_once(self, params).await? == 1)
    }

    async fn schedules_mark_removed(
        &self,
        declared: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let names = declared.iter().map(|n| serde_json::json!(n)).collect();
        self.sql
            .schedule
            .mark_removed
            .execute_once(self, schedule::MarkRemoved { names, now })
            .await
    }

    async fn schedules_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let rows = self
            .sql
            .schedule
            .due
            .query_once(self, schedule::Due { now, limit: i64::from(limit) })
            .await?;
        rows.iter().map(|r| Name::read(r).map(|r| r.name)).collect()
    }

    async fn schedule_run_insert(
        &self,
        tx: &mut dyn Transaction,
        run: &NewRun<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = schedule::RunInsert {
            id: run.id.into(),
            schedule: run.schedule.into(),
            tick_at: run.tick_at,
            status: if run.skipped.is_some() { "skipped" } else { "run" }.into(),
            trigger: run.trigger.into(),
            reason: run.skipped.map(str::to_owned),
            outbox_id: run.outbox_id.map(str::to_owned),
            now,
        };
        Ok(self.sql.schedule.run_insert.execute(tx, params).await? == 1)
    }

    async fn schedule_advance(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        next_due_at: DateTime<Utc>,
        last_tick_at: DateTime<Utc>,
        last_run_id: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let params = schedule::Advance {
            name: name.into(),
            next_due_at,
            last_tick_at,
            last_run_id: last_run_id.map(str::to_owned),
            now,
        };
        self.sql.schedule.advance.execute(tx, params).await?;
        Ok(())
    }

    async fn schedule_set_last_run(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.sql
            .schedule
            .set_last_run
            .execute(
                tx,
                schedule::SetLastRun { name: name.into(), last_run_id: run_id.into(), now },
            )
            .await?;
        Ok(())
    }

    async fn schedule_run_unfinished(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
    ) -> Result<i64, StoreError> {
        self.sql
            .schedule
            .unfinished
            .query_one(tx, schedule::Unfinished { run_id: run_id.into() })
            .await
            .and_then(|row| Unfinished::read(&row))
            .map(|u| u.unfinished)
    }

    async fn schedule_set_paused(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        paused_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.sql
            .schedule
            .set_paused
            .execute(tx, schedule::SetPaused { name: name.into(), paused_at, now })
            .await?;
        Ok(())
    }

    async fn schedule_runs(
        &self,
        schedule: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ScheduleRun>, StoreError> {
        let params =
            schedule::Runs { schedule: schedule.map(str::to_owned), limit: i64::from(limit) };
        self.sql.schedule.runs.query_once(self, params).await?.iter().map(run_row).collect()
    }

    async fn db_role(&self, tx: &mut dyn Transaction) -> Result<String, StoreError> {
        Ok(self
            .sql
            .schedule
            .current_role
            .query_one(tx, schedule::CurrentRole {})
            .await
            .and_then(|row| Role::read(&row))?
            .role)
    }

    async fn operator_action_insert(
        &self,
        tx: &mut dyn Transaction,
        a: &StoredAction,
    ) -> Result<(), StoreError> {
        let params = schedule::ActionInsert {
            id: a.id.as_str().into(),
            acted_at: a.acted_at,
            action: a.action.as_str().into(),
            item_kind: a.item_kind.as_str().into(),
            item: a.item.as_str().into(),
            item_state: a.item_state.as_str().into(),
            operator: a.operator.as_str().into(),
            db_role: a.db_role.as_str().into(),
            detail: a.detail.clone(),
            os_account: a.os_account.clone(),
        };
        self.sql.schedule.action_insert.execute(tx, params).await?;
        Ok(())
    }

    async fn operator_actions(
        &self,
        filter: &ActionFilter,
    ) -> Result<Vec<StoredAction>, StoreError> {
        let params = schedule::Actions {
            item_kind: filter.item_kind.clone(),
            item: filter.item.clone(),
            operator: filter.operator.clone(),
            since: filter.since,
            limit: i64::from(filter.limit),
        };
        self.sql.schedule.actions.query_once(self, params).await?.iter().map(action_row).collect()
    }
}
