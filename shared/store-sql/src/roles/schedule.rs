//! The schedule role implemented once over each adapter's own SQL, as the pipeline role is.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::operator::{ActionFilter, StoredAction};
use jadpo_core::model::schedule::NewRun;
use jadpo_core::model::schedule::NewSchedule;
use jadpo_core::model::schedule::{ScheduleRow, ScheduleRun};
use jadpo_core::ports::ScheduleStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;
use crate::tables::schedule;

fn opt(v: Option<&str>) -> Option<String> {
    v.map(str::to_owned)
}

fn schedule_row(r: &Row) -> Result<ScheduleRow, StoreError> {
    Ok(ScheduleRow {
        name: r.get_str("name")?.to_owned(),
        expression: r.get_str("expression")?.to_owned(),
        event_type: r.get_str("event_type")?.to_owned(),
        next_due_at: r.get_timestamp("next_due_at")?,
        last_tick_at: r.get_opt_timestamp("last_tick_at")?,
        last_run_id: r.get_opt_str("last_run_id")?.map(str::to_owned),
        paused_at: r.get_opt_timestamp("paused_at")?,
        removed_at: r.get_opt_timestamp("removed_at")?,
        lease_owner: r.get_opt_str("lease_owner")?.map(str::to_owned),
        lease_expires_at: r.get_opt_timestamp("lease_expires_at")?,
    })
}

fn run_row(r: &Row) -> Result<ScheduleRun, StoreError> {
    Ok(ScheduleRun {
        id: r.get_str("id")?.to_owned(),
        schedule: r.get_str("schedule")?.to_owned(),
        tick_at: r.get_timestamp("tick_at")?,
        status: r.get_str("status")?.to_owned(),
        trigger: r.get_str("trigger")?.to_owned(),
        reason: r.get_opt_str("reason")?.map(str::to_owned),
        outbox_id: r.get_opt_str("outbox_id")?.map(str::to_owned),
        recorded_at: r.get_timestamp("recorded_at")?,
    })
}

fn action_row(r: &Row) -> Result<StoredAction, StoreError> {
    Ok(StoredAction {
        id: r.get_str("id")?.to_owned(),
        acted_at: r.get_timestamp("acted_at")?,
        action: r.get_str("action")?.to_owned(),
        item_kind: r.get_str("item_kind")?.to_owned(),
        item: r.get_str("item")?.to_owned(),
        item_state: r.get_str("item_state")?.to_owned(),
        operator: r.get_str("operator")?.to_owned(),
        db_role: r.get_str("db_role")?.to_owned(),
        detail: r.get_opt_str("detail")?.map(str::to_owned),
        os_account: r.get_opt_str("os_account")?.map(str::to_owned),
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
        rows.iter().map(|r| r.get_str("name").map(str::to_owned)).collect()
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
            reason: opt(run.skipped),
            outbox_id: opt(run.outbox_id),
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
            last_run_id: opt(last_run_id),
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
            .await?
            .get_i64("unfinished")
    }

    async fn schedule_set_paused(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        paused_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let paused = paused_at;
        self.sql
            .schedule
            .set_paused
            .execute(tx, schedule::SetPaused { name: name.into(), paused_at: paused, now })
            .await?;
        Ok(())
    }

    async fn schedule_runs(
        &self,
        schedule: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ScheduleRun>, StoreError> {
        let params = schedule::Runs { schedule: opt(schedule), limit: i64::from(limit) };
        self.sql.schedule.runs.query_once(self, params).await?.iter().map(run_row).collect()
    }

    async fn db_role(&self, tx: &mut dyn Transaction) -> Result<String, StoreError> {
        Ok(self
            .sql
            .schedule
            .current_role
            .query_one(tx, schedule::CurrentRole {})
            .await?
            .get_str("role")?
            .to_owned())
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
            detail: opt(a.detail.as_deref()),
            os_account: opt(a.os_account.as_deref()),
        };
        self.sql.schedule.action_insert.execute(tx, params).await?;
        Ok(())
    }

    async fn operator_actions(
        &self,
        filter: &ActionFilter,
    ) -> Result<Vec<StoredAction>, StoreError> {
        let params = schedule::Actions {
            item_kind: opt(filter.item_kind.as_deref()),
            item: opt(filter.item.as_deref()),
            operator: opt(filter.operator.as_deref()),
            since: filter.since,
            limit: i64::from(filter.limit),
        };
        self.sql.schedule.actions.query_once(self, params).await?.iter().map(action_row).collect()
    }
}
