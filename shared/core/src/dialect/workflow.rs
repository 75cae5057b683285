//! The workflow store implemented once over each adapter's own SQL: the nine steps of a
//! transition in one transaction, Sessions, run leases and commands. The execution row's
//! physical layout differs per dialect ([`execution_params`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::error::StoreError;
use crate::model::workflow::rows::CommandRow;
use crate::model::workflow::rows::ExecutionLease;
use crate::model::workflow::rows::SessionRecord;
use crate::model::workflow::rows::TransitionError;
use crate::model::workflow::rows::TransitionWrite;
use crate::model::workflow::state::{ExecutionState, ExecutionStatus, RuntimeEvent};
use crate::ports::WorkflowStore;
use crate::sql::{Dialect, Row, SqlValue};
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's statements for the workflow tables.
#[derive(Debug)]
pub struct WorkflowSql {
    /// `(run_id)` → `revision`, locking the row where the dialect can.
    pub execution_lock: &'static str,
    /// Inserts an execution; parameters per [`execution_params`].
    pub execution_insert: &'static str,
    /// Updates an execution; parameters per [`execution_params`].
    pub execution_update: &'static str,
    /// `(run_id)` → the execution's row.
    pub execution_get: &'static str,
    /// `(id, run_id, seq, type, payload, timestamp)`.
    pub event_insert: &'static str,
    /// `(run_id)` → events in `seq` order: `seq, type, payload, timestamp`.
    pub events_list: &'static str,
    /// `(id, run_id, seq, node_id, type, payload, idempotency_key, created_at)`.
    pub command_insert: &'static str,
    /// `(id, status, processed_at)` on a pending command.
    pub command_ack: &'static str,
    /// `(session_id)` → `user_id, revision`, locking the row where the dialect can.
    pub session_lock: &'static str,
    /// `(session_id, run_id, now, expected_revision)`.
    pub session_bind: &'static str,
    /// `(id, user_id, context, now)`.
    pub session_insert: &'static str,
    /// `(id)` → the Session row.
    pub session_get: &'static str,
    /// `(id, user_id, context, now, expected_revision, context_changed 0/1)`: replace the context.
    pub session_update_context: &'static str,
    /// `(run_id, worker_id, lease_id, expires_at, now)` → `lease_id` when acquired (free or
    /// expired), no row when another holder's lease is live.
    pub run_lease_take: &'static str,
    /// `(run_id, lease_id, expires_at, now)`: extend a live lease.
    pub run_lease_extend: &'static str,
    /// `(run_id, lease_id)`: release.
    pub run_lease_give_up: &'static str,
    /// `(run_id, lease_id, now)` → a row while that lease is live, locking it where the dialect
    /// can.
    pub run_lease_fence: &'static str,
    /// `(now, limit)` → `run_id` of running or cancelling runs with no live lease.
    pub runnable: &'static str,
    /// `(id)` → a command row: `id, run_id, node_id, type, payload, status, idempotency_key`.
    pub command_get: &'static str,
    /// `(now, lost_before, limit)` → `command_id` of pending commands of live runs never put on
    /// the queue or put there before `lost_before`, stamped as enqueued at `now`.
    pub commands_claim_due: &'static str,
    /// `(command_id, run_id, now)`: stamp a command as put on the queue (insert or refresh).
    pub command_mark_enqueued: &'static str,
    /// `()` → `run_id, revision, last_seq` of runs with events whose revision differs from their
    /// last event's seq.
    pub verify_revisions: &'static str,
    /// `()` → `n`: events whose id is not `${run_id}:${seq}`, or whose `(run_id, seq)` repeats.
    pub verify_event_ids: &'static str,
    /// `()` → `id, status`: commands whose `processed_at` does not fit their status.
    pub verify_command_times: &'static str,
    /// `(after, limit)` → `run_id` of runs in id order, for paging.
    pub executions_page: &'static str,
    /// `()` → `id` of every Session.
    pub sessions_all: &'static str,
    /// `(id)`: delete a Session (verification probes only).
    pub session_delete: &'static str,
    /// `(run_id)`: delete an execution, cascading to its events, commands and lease.
    pub execution_delete: &'static str,
    /// `(run_id)` → every command of a run: `id, seq, node_id, type, payload, status,
    /// idempotency_key, created_at, processed_at`, in `seq` order.
    pub commands_of_run: &'static str,
    /// `(id, run_id, seq, node_id, type, payload, status, idempotency_key, created_at,
    /// processed_at)`: a command as exported.
    pub command_import: &'static str,
    /// `(id)` → every column of a Session.
    pub session_export: &'static str,
    /// `(id, user_id, context, active_run_id, revision, context_revision, created_at, updated_at)`.
    pub session_import: &'static str,
}

/// An adapter that speaks the workflow tables through its own [`WorkflowSql`].
pub trait WorkflowDialect: TransactionalStore {
    /// The adapter's statements.
    fn workflow_sql(&self) -> &'static WorkflowSql;
}

pub(crate) fn ms(t: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t).unwrap_or_default()
}

fn json_or_null(v: Option<&Value>) -> SqlValue {
    v.map_or(SqlValue::Null, |v| SqlValue::Json(v.clone()))
}

/// The execution row's parameters in `dialect`'s physical encoding: `$1` run_id, `$2`
/// workflow_id, `$3` workflow_version, `$4` status, `$5` current_node_id, `$6` revision, then
/// PostgreSQL: `$7` input, `$8` data, `$9` error, `$10` cancellation_state, `$11` loop_state,
/// `$12` created_at, `$13` updated_at; SQLite: `$7` state_json, `$8` created_at, `$9` updated_at.
pub fn execution_params(dialect: Dialect, s: &ExecutionState) -> Result<Vec<SqlValue>, StoreError> {
    let revision =
        i64::try_from(s.revision).map_err(|_| StoreError::invalid("revision out of range"))?;
    let mut p = vec![
        s.run_id.as_str().into(),
        s.workflow_id.as_str().into(),
        s.workflow_version.as_str().into(),
        s.status.as_str().into(),
        s.current_node_id.as_deref().map_or(SqlValue::Null, SqlValue::from),
        revision.into(),
    ];
    match dialect {
        Dialect::Postgres => p.extend([
            SqlValue::Json(s.input.clone()),
            SqlValue::Json(Value::Object(s.data.clone())),
            json_or_null(s.error.as_ref()),
            json_or_null(s.cancellation_state.as_ref()),
            s.loop_state
                .as_ref()
                .map_or(SqlValue::Null, |l| SqlValue::Json(Value::Object(l.clone()))),
            ms(s.created_at).into(),
            ms(s.updated_at).into(),
        ]),
        Dialect::Sqlite => p.extend([
            serde_json::to_string(s).map_err(|e| StoreError::internal(e.to_string()))?.into(),
            ms(s.created_at).into(),
            ms(s.updated_at).into(),
        ]),
    }
    Ok(p)
}

fn execution_from_row(dialect: Dialect, r: &Row) -> Result<ExecutionState, StoreError> {
    if dialect == Dialect::Sqlite {
        return serde_json::from_str(r.get_str("state_json")?).map_err(|e| {
            StoreError::internal(format!("state_json is not an execution state: {e}"))
        });
    }
    let status = r.get_str("status")?;
    let object = |column: &str| -> Result<Option<Map<String, Value>>, StoreError> {
        Ok(match r.get(column)? {
            SqlValue::Null => None,
            _ => r.get_json(column)?.as_object().cloned(),
        })
    };
    let optional = |column: &str| -> Result<Option<Value>, StoreError> {
        Ok(match r.get(column)? {
            SqlValue::Null => None,
            _ => Some(r.get_json(column)?),
        })
    };
    Ok(ExecutionState {
        run_id: r.get_str("run_id")?.to_owned(),
        workflow_id: r.get_str("workflow_id")?.to_owned(),
        workflow_version: r.get_str("workflow_version")?.to_owned(),
        status: ExecutionStatus::parse(status)
            .ok_or_else(|| StoreError::internal(format!("unknown status {status:?}")))?,
        current_node_id: r.get_opt_str("current_node_id")?.map(str::to_owned),
        revision: u64::try_from(r.get_i64("revision")?).unwrap_or(0),
        input: r.get_json("input")?,
        data: object("data")?.unwrap_or_default(),
        error: optional("error")?,
        cancellation_state: optional("cancellation_state")?,
        loop_state: object("loop_state")?,
        created_at: r.get_timestamp("created_at")?.timestamp_millis(),
        updated_at: r.get_timestamp("updated_at")?.timestamp_millis(),
    })
}

async fn write_steps(
    sql: &WorkflowSql,
    dialect: Dialect,
    tx: &mut dyn Transaction,
    w: &TransitionWrite<'_>,
) -> Result<(), TransitionError> {
    let t = w.transition;
    if let Some(fence) = &w.lease {
        let live = tx
            .query_opt(
                sql.run_lease_fence,
                &[w.run_id.into(), fence.lease_id.as_str().into(), fence.now_ms.into()],
            )
            .await?;
        if live.is_none() {
            return Err(TransitionError::LeaseLost(w.run_id.to_owned()));
        }
    }
    // 1–2: lock/read the current revision and compare.
    let current = tx.query_opt(sql.execution_lock, &[w.run_id.into()]).await?;
    let actual =
        current.map(|r| r.get_i64("revision")).transpose()?.map(|r| u64::try_from(r).unwrap_or(0));
    if actual != w.expected_revision {
        return Err(TransitionError::StaleRevision {
            run_id: w.run_id.to_owned(),
            expected: w.expected_revision,
            actual,
        });
    }
    // 3: the materialized execution.
    let params = execution_params(dialect, &t.state)?;
    let statement = if actual.is_none() { sql.execution_insert } else { sql.execution_update };
    tx.execute(statement, &params).await?;
    // 4: the events.
    for e in &t.events {
        let seq = i64::try_from(e.seq).map_err(|_| StoreError::invalid("seq out of range"))?;
        let params = [
            e.id(w.run_id).into(),
            w.run_id.into(),
            seq.into(),
            e.event_type.as_str().into(),
            SqlValue::Json(e.payload.clone()),
            e.timestamp.into(),
        ];
        tx.execute(sql.event_insert, &params).await?;
    }
    // 5: new commands.
    let now = ms(t.state.updated_at);
    for c in &t.commands {
        let seq = i64::try_from(c.seq).map_err(|_| StoreError::invalid("seq out of range"))?;
        let key = c.idempotency_key.as_deref().map_or(SqlValue::Null, SqlValue::from);
        let params = [
            c.id.as_str().into(),
            w.run_id.into(),
            seq.into(),
            c.node_id.as_str().into(),
            c.command_type.as_str().into(),
            SqlValue::Json(c.payload.clone()),
            key,
            now.into(),
        ];
        tx.execute(sql.command_insert, &params).await?;
    }
    // 6: acknowledgements.
    for a in &t.acks {
        if tx
            .execute(sql.command_ack, &[a.command_id.as_str().into(), a.status.into(), now.into()])
            .await?
            != 1
        {
            return Err(TransitionError::CommandNotPending(a.command_id.clone()));
        }
    }
    // 7–9: the Session binding.
    if let Some(s) = &w.session {
        let row = tx.query_opt(sql.session_lock, &[s.session_id.as_str().into()]).await?;
        let Some(row) = row.filter(|r| r.get_str("user_id").is_ok_and(|u| u == s.user_id)) else {
            return Err(TransitionError::SessionNotFound(s.session_id.clone()));
        };
        let actual = row.get_i64("revision")?;
        if actual != s.expected_revision {
            return Err(TransitionError::StaleSession {
                session_id: s.session_id.clone(),
                expected: s.expected_revision,
                actual,
            });
        }
        let params =
            [s.session_id.as_str().into(), w.run_id.into(), now.into(), s.expected_revision.into()];
        if tx.execute(sql.session_bind, &params).await? != 1 {
            return Err(TransitionError::StaleSession {
                session_id: s.session_id.clone(),
                expected: s.expected_revision,
                actual,
            });
        }
    }
    Ok(())
}

fn session_from_row(r: &Row) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id: r.get_str("id")?.to_owned(),
        user_id: r.get_str("user_id")?.to_owned(),
        context: r.get_json("context")?,
        active_run_id: r.get_opt_str("active_run_id")?.map(str::to_owned),
        revision: r.get_i64("revision")?,
        context_revision: r.get_i64("context_revision")?,
    })
}

#[async_trait]
impl<S: WorkflowDialect> WorkflowStore for S {
    async fn commit_transition(&self, write: &TransitionWrite<'_>) -> Result<(), TransitionError> {
        let mut tx = self.begin().await?;
        match write_steps(self.workflow_sql(), self.dialect(), tx.as_mut(), write).await {
            Ok(()) => tx.commit().await.map_err(|e| match e.kind() {
                crate::StoreErrorKind::Conflict => TransitionError::StaleRevision {
                    run_id: write.run_id.to_owned(),
                    expected: write.expected_revision,
                    actual: None,
                },
                _ => TransitionError::Store(e),
            }),
            Err(e) => {
                let _ = tx.rollback().await;
                // A concurrent first insert of the same run or event loses on a unique key.
                match e {
                    TransitionError::Store(s) if s.kind() == crate::StoreErrorKind::Conflict => {
                        Err(TransitionError::StaleRevision {
                            run_id: write.run_id.to_owned(),
                            expected: write.expected_revision,
                            actual: None,
                        })
                    }
                    other => Err(other),
                }
            }
        }
    }

    async fn execution_get(&self, run_id: &str) -> Result<Option<ExecutionState>, StoreError> {
        let rows = self.query_once(self.workflow_sql().execution_get, &[run_id.into()]).await?;
        rows.first().map(|r| execution_from_row(self.dialect(), r)).transpose()
    }

    async fn execution_events(&self, run_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        let rows = self.query_once(self.workflow_sql().events_list, &[run_id.into()]).await?;
        rows.iter()
            .map(|r| {
                Ok(RuntimeEvent {
                    seq: u64::try_from(r.get_i64("seq")?).unwrap_or(0),
                    event_type: r.get_str("type")?.to_owned(),
                    payload: r.get_json("payload")?,
                    timestamp: r.get_i64("timestamp")?,
                })
            })
            .collect()
    }

    async fn session_create(
        &self,
        id: &str,
        user_id: &str,
        context: &Value,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let params = [id.into(), user_id.into(), SqlValue::Json(context.clone()), now.into()];
        self.execute_once(self.workflow_sql().session_insert, &params).await.map(|_| ())
    }

    async fn session_get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let rows = self.query_once(self.workflow_sql().session_get, &[id.into()]).await?;
        rows.first().map(session_from_row).transpose()
    }

    async fn session_update_context(
        &self,
        id: &str,
        user_id: &str,
        context: &Value,
        expected_revision: i64,
        context_changed: bool,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [
            id.into(),
            user_id.into(),
            SqlValue::Json(context.clone()),
            now.into(),
            expected_revision.into(),
            i64::from(context_changed).into(),
        ];
        Ok(self.execute_once(self.workflow_sql().session_update_context, &params).await? == 1)
    }

    async fn run_lease_take(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        expires_at: i64,
    ) -> Result<Option<ExecutionLease>, StoreError> {
        let secs = u64::try_from(now_ms.div_euclid(1000)).unwrap_or(0);
        let nanos = u32::try_from(now_ms.rem_euclid(1000) * 1_000_000).unwrap_or(0);
        let lease_id = uuid::Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, secs, nanos))
            .to_string();
        let params = [
            run_id.into(),
            worker_id.into(),
            lease_id.as_str().into(),
            expires_at.into(),
            now_ms.into(),
        ];
        let rows = self.query_once(self.workflow_sql().run_lease_take, &params).await?;
        Ok(rows.first().map(|_| ExecutionLease {
            run_id: run_id.to_owned(),
            worker_id: worker_id.to_owned(),
            lease_id,
            expires_at,
        }))
    }

    async fn run_lease_extend(
        &self,
        run_id: &str,
        lease_id: &str,
        now_ms: i64,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        let params = [run_id.into(), lease_id.into(), expires_at.into(), now_ms.into()];
        Ok(self.execute_once(self.workflow_sql().run_lease_extend, &params).await? == 1)
    }

    async fn run_lease_give_up(&self, run_id: &str, lease_id: &str) -> Result<bool, StoreError> {
        Ok(self
            .execute_once(self.workflow_sql().run_lease_give_up, &[run_id.into(), lease_id.into()])
            .await?
            == 1)
    }

    async fn runs_runnable(&self, now_ms: i64, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = self
            .query_once(self.workflow_sql().runnable, &[now_ms.into(), i64::from(limit).into()])
            .await?;
        rows.iter().map(|r| r.get_str("run_id").map(str::to_owned)).collect()
    }

    async fn command_get(&self, id: &str) -> Result<Option<CommandRow>, StoreError> {
        let rows = self.query_once(self.workflow_sql().command_get, &[id.into()]).await?;
        rows.first()
            .map(|r| {
                Ok(CommandRow {
                    id: r.get_str("id")?.to_owned(),
                    run_id: r.get_str("run_id")?.to_owned(),
                    node_id: r.get_str("node_id")?.to_owned(),
                    command_type: r.get_str("type")?.to_owned(),
                    payload: r.get_json("payload")?,
                    status: r.get_str("status")?.to_owned(),
                    idempotency_key: r.get_opt_str("idempotency_key")?.map(str::to_owned),
                })
            })
            .transpose()
    }

    async fn commands_claim_due(
        &self,
        now: DateTime<Utc>,
        lost_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = self.workflow_sql().commands_claim_due;
        let rows = self.query_once(sql, &[now.into(), lost_before.into(), limit.into()]).await?;
        rows.iter().map(|r| r.get_str("command_id").map(str::to_owned)).collect()
    }

    async fn command_mark_enqueued(
        &self,
        id: &str,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let sql = self.workflow_sql().command_mark_enqueued;
        self.execute_once(sql, &[id.into(), run_id.into(), now.into()]).await.map(|_| ())
    }
}
