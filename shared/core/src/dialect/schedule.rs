//! The schedule role implemented once over each adapter's own SQL, as the pipeline role is.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::operator::StoredAction;
use crate::model::schedule::NewRun;
use crate::model::schedule::NewSchedule;
use crate::model::schedule::{ScheduleRow, ScheduleRun};
use crate::ports::ScheduleStore;
use crate::sql::{Row, SqlValue};
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's statements for `jadpo_schedules`, `jadpo_schedule_runs` and
/// `jadpo_operator_actions`. Parameters are documented per field.
#[derive(Debug)]
pub struct ScheduleSql {
    /// `()` → every schedule ([`ScheduleRow`]'s columns), by name.
    pub list: &'static str,
    /// `(name)` → one schedule.
    pub get: &'static str,
    /// `(name, expression, event_type, next_due_at, now)`, inserting nothing on conflict.
    pub insert: &'static str,
    /// `(name, expression, event_type, now)`: a changed declaration; the next due time stays.
    pub redeclare: &'static str,
    /// `(name, next_due_at, now)`: a removed schedule declared again.
    pub restore: &'static str,
    /// `(names, now)`, `names` a JSON array of the declared names: mark the others removed.
    pub mark_removed: &'static str,
    /// `(now, limit)` → `name` of active or paused schedules due at `now`, the oldest first.
    pub due: &'static str,
    /// `(id, schedule, tick_at, status, trigger, reason, outbox_id, now)`, inserting nothing on
    /// conflict.
    pub run_insert: &'static str,
    /// `(name, next_due_at, last_tick_at, last_run_id or NULL, now)`; clears the overdue alert.
    pub advance: &'static str,
    /// `(name, last_run_id, now)`: record an operator's run as the last run.
    pub set_last_run: &'static str,
    /// `(run_id)` → `unfinished`: the run's pending deliveries.
    pub unfinished: &'static str,
    /// `(name, paused_at or NULL, now)`.
    pub set_paused: &'static str,
    /// `(schedule or NULL, limit)` → runs, newest first ([`ScheduleRun`]'s columns).
    pub runs: &'static str,
    /// `()` → `role`: the database role in use.
    pub current_role: &'static str,
    /// `(id, acted_at, action, item_kind, item, item_state, operator, db_role, detail)`.
    pub action_insert: &'static str,
    /// `(item_kind or NULL, item or NULL, limit)` → operator actions, newest first.
    pub actions: &'static str,
}

/// An adapter that speaks schedules through its own [`ScheduleSql`].
pub trait ScheduleDialect: TransactionalStore {
    /// The adapter's statements.
    fn schedule_sql(&self) -> &'static ScheduleSql;
}

fn opt(v: Option<&str>) -> SqlValue {
    v.map_or(SqlValue::Null, SqlValue::from)
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
    })
}

#[async_trait]
impl<S: ScheduleDialect> ScheduleStore for S {
    async fn schedules_list(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        self.query_once(self.schedule_sql().list, &[]).await?.iter().map(schedule_row).collect()
    }

    async fn schedule_get(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
    ) -> Result<Option<ScheduleRow>, StoreError> {
        tx.query_opt(self.schedule_sql().get, &[name.into()])
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
        let params = [
            s.name.into(),
            s.expression.into(),
            s.event_type.into(),
            s.next_due_at.into(),
            now.into(),
        ];
        Ok(self.execute_once(self.schedule_sql().insert, &params).await? == 1)
    }

    async fn schedule_redeclare(
        &self,
        s: &NewSchedule<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [s.name.into(), s.expression.into(), s.event_type.into(), now.into()];
        Ok(self.execute_once(self.schedule_sql().redeclare, &params).await? == 1)
    }

    async fn schedule_restore(
        &self,
        name: &str,
        next_due_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [name.into(), next_due_at.into(), now.into()];
        Ok(self.execute_once(self.schedule_sql().restore, &params).await? == 1)
    }

    async fn schedules_mark_removed(
        &self,
        declared: &[String],
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let names = SqlValue::Json(declared.iter().map(|n| serde_json::json!(n)).collect());
        self.execute_once(self.schedule_sql().mark_removed, &[names, now.into()]).await
    }

    async fn schedules_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let rows = self
            .query_once(self.schedule_sql().due, &[now.into(), i64::from(limit).into()])
            .await?;
        rows.iter().map(|r| r.get_str("name").map(str::to_owned)).collect()
    }

    async fn schedule_run_insert(
        &self,
        tx: &mut dyn Transaction,
        run: &NewRun<'_>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [
            run.id.into(),
            run.schedule.into(),
            run.tick_at.into(),
            if run.skipped.is_some() { "skipped" } else { "run" }.into(),
            run.trigger.into(),
            opt(run.skipped),
            opt(run.outbox_id),
            now.into(),
        ];
        Ok(tx.execute(self.schedule_sql().run_insert, &params).await? == 1)
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
        let params =
            [name.into(), next_due_at.into(), last_tick_at.into(), opt(last_run_id), now.into()];
        tx.execute(self.schedule_sql().advance, &params).await?;
        Ok(())
    }

    async fn schedule_set_last_run(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        tx.execute(self.schedule_sql().set_last_run, &[name.into(), run_id.into(), now.into()])
            .await?;
        Ok(())
    }

    async fn schedule_run_unfinished(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
    ) -> Result<i64, StoreError> {
        tx.query_one(self.schedule_sql().unfinished, &[run_id.into()]).await?.get_i64("unfinished")
    }

    async fn schedule_set_paused(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        paused_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let paused = paused_at.map_or(SqlValue::Null, SqlValue::from);
        tx.execute(self.schedule_sql().set_paused, &[name.into(), paused, now.into()]).await?;
        Ok(())
    }

    async fn schedule_runs(
        &self,
        schedule: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ScheduleRun>, StoreError> {
        let params = [opt(schedule), i64::from(limit).into()];
        self.query_once(self.schedule_sql().runs, &params).await?.iter().map(run_row).collect()
    }

    async fn db_role(&self, tx: &mut dyn Transaction) -> Result<String, StoreError> {
        Ok(tx.query_one(self.schedule_sql().current_role, &[]).await?.get_str("role")?.to_owned())
    }

    async fn operator_action_insert(
        &self,
        tx: &mut dyn Transaction,
        a: &StoredAction,
    ) -> Result<(), StoreError> {
        let params = [
            a.id.as_str().into(),
            a.acted_at.into(),
            a.action.as_str().into(),
            a.item_kind.as_str().into(),
            a.item.as_str().into(),
            a.item_state.as_str().into(),
            a.operator.as_str().into(),
            a.db_role.as_str().into(),
            opt(a.detail.as_deref()),
        ];
        tx.execute(self.schedule_sql().action_insert, &params).await?;
        Ok(())
    }

    async fn operator_actions(
        &self,
        item_kind: Option<&str>,
        item: Option<&str>,
        limit: u32,
    ) -> Result<Vec<StoredAction>, StoreError> {
        let params = [opt(item_kind), opt(item), i64::from(limit).into()];
        self.query_once(self.schedule_sql().actions, &params)
            .await?
            .iter()
            .map(action_row)
            .collect()
    }
}
