//! Operator-side workflow operations (verification queries, paging, export and import)
//! implemented once over each adapter's own SQL.

use async_trait::async_trait;

use chrono::{DateTime, Utc};
use jadpo_core::error::StoreError;
use jadpo_core::ports::WorkflowOps;
use jadpo_core::ports::WorkflowStore;
use jadpo_core::transaction::Transaction;
use jadpo_core::transaction::{TransactionalStore, commit_or_rollback};
use jadpo_workflow::rows::RecoveryPoint;
use jadpo_workflow::rows::RunDeleted;
use jadpo_workflow::rows::RunExport;
use jadpo_workflow::rows::SessionExport;
use jadpo_workflow::rows::{RunQuery, RunSummary};
use jadpo_workflow::state::ExecutionStatus;

use crate::dialect::ms;
use crate::roles::delivery_admin::page_read;
use crate::rows::{Id, RunId, first_count};
use crate::store::SqlStore;
use crate::tables::workflow;

#[async_trait]
impl<C: TransactionalStore> WorkflowOps for SqlStore<C> {
    async fn run_export(&self, run_id: &str) -> Result<Option<RunExport>, StoreError> {
        let Some(state) = self.execution_get(run_id).await? else { return Ok(None) };
        let events = self.execution_events(run_id).await?;
        let rows = self
            .sql
            .workflow
            .commands_of_run
            .query_once(self, workflow::CommandsOfRun { run_id: run_id.into() })
            .await?;
        let commands = rows
            .iter()
            .map(|r| {
                let c = CommandColumns::read(r)?;
                Ok(serde_json::json!({
                    "id": c.id, "seq": c.seq, "node_id": c.node_id, "type": c.r#type,
                    "payload": c.payload, "status": c.status, "idempotency_key": c.idempotency_key,
                    "created_at": c.created_at.timestamp_millis(),
                    "processed_at": c.processed_at.map(|t| t.timestamp_millis()),
                }))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let owner = self.execution_owner(run_id).await?;
        let actors = self.execution_event_actors(run_id).await?;
        let legacy = self
            .sql
            .workflow
            .legacy_event_ids
            .query_once(self, workflow::LegacyEventIds { run_id: run_id.into() })
            .await?;
        let event_ids = legacy
            .iter()
            .map(|r| {
                let e = EventIdColumns::read(r)?;
                Ok((e.seq, e.id))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Some(RunExport { state, events, commands, owner, actors, event_ids }))
    }

    async fn run_import(&self, run: &RunExport) -> Result<(), StoreError> {
        let sql = self.sql.workflow;
        let run_id = run.state.run_id.as_str();
        let mut tx = self.begin().await?;
        let result = async {
            let layout = &self.sql.execution;
            let mut params = (layout.params)(&run.state)?;
            params.push(run.owner.as_deref().into());
            tx.execute(layout.insert, &params).await?;
            for e in &run.events {
                let seq =
                    i64::try_from(e.seq).map_err(|_| StoreError::invalid("seq out of range"))?;
                let params = workflow::EventInsert {
                    id: run.event_id(e),
                    run_id: run_id.into(),
                    seq,
                    event_type: e.event_type.as_str().into(),
                    payload: e.stored(),
                    timestamp: e.timestamp,
                    actor: run.actors.get(&e.seq).cloned(),
                };
                sql.event_insert.execute(tx.as_mut(), params).await?;
            }
            for c in &run.commands {
                let text = |k: &str| c[k].as_str().map(ToOwned::to_owned);
                let time = |k: &str| c[k].as_i64().map(ms);
                let params = workflow::CommandImport {
                    id: text("id"),
                    run_id: run_id.into(),
                    seq: c["seq"].as_i64().unwrap_or(0),
                    node_id: text("node_id"),
                    command_type: text("type"),
                    payload: c["payload"].clone(),
                    status: text("status"),
                    idempotency_key: text("idempotency_key"),
                    created_at: time("created_at"),
                    processed_at: time("processed_at"),
                };
                sql.command_import.execute(tx.as_mut(), params).await?;
            }
            Ok::<(), StoreError>(())
        }
        .await;
        commit_or_rollback(tx, result).await
    }

    async fn session_export(&self, id: &str) -> Result<Option<SessionExport>, StoreError> {
        let rows = self
            .sql
            .workflow
            .session_export
            .query_once(self, workflow::SessionExport { id: id.into() })
            .await?;
        rows.first()
            .map(|r| {
                let s = SessionColumns::read(r)?;
                Ok(SessionExport {
                    id: s.id,
                    user_id: s.user_id,
                    context: s.context,
                    active_run_id: s.active_run_id,
                    revision: s.revision,
                    context_revision: s.context_revision,
                    created_at: s.created_at.timestamp_millis(),
                    updated_at: s.updated_at.timestamp_millis(),
                    owner: s.owner,
                })
            })
            .transpose()
    }

    async fn session_import(&self, s: &SessionExport) -> Result<(), StoreError> {
        let params = workflow::SessionImport {
            id: s.id.as_str().into(),
            user_id: s.user_id.as_str().into(),
            context: s.context.clone(),
            active_run_id: s.active_run_id.clone(),
            revision: s.revision,
            context_revision: s.context_revision,
            created_at: ms(s.created_at),
            updated_at: ms(s.updated_at),
            owner: s.owner.clone(),
        };
        self.sql.workflow.session_import.execute_once(self, params).await.map(|_| ())
    }

    async fn verify_revisions(&self) -> Result<Vec<(String, i64, i64)>, StoreError> {
        let rows = self
            .sql
            .workflow
            .verify_revisions
            .query_once(self, workflow::VerifyRevisions {})
            .await?;
        rows.iter()
            .map(|r| {
                let v = RevisionColumns::read(r)?;
                Ok((v.run_id, v.revision, v.last_seq))
            })
            .collect()
    }

    async fn verify_event_ids(&self) -> Result<(i64, i64), StoreError> {
        let rows = self
            .sql
            .workflow
            .verify_event_ids
            .query_once(self, workflow::VerifyEventIds {})
            .await?;
        rows.first().map_or(Ok((0, 0)), |r| {
            let v = EventIdCounts::read(r)?;
            Ok((v.pairs, v.ids))
        })
    }

    async fn events_upgrade_page(
        &self,
        after: &(String, i64),
        limit: u32,
    ) -> Result<Option<((String, i64), u64)>, StoreError> {
        let sql = self.sql.workflow;
        let mut tx = self.begin().await?;
        let result = async {
            let params = workflow::EventsPageEnd {
                after_run: after.0.as_str().into(),
                after_seq: after.1,
                limit: i64::from(limit),
            };
            let page = sql.events_page_end.query(tx.as_mut(), params).await?;
            let Some(last) = page.last() else { return Ok(None) };
            let last = RunSeq::read(last)?;
            let end = (last.run_id, last.seq);
            let range = workflow::EventsUpgradeRange {
                from_run: after.0.as_str().into(),
                from_seq: after.1,
                to_run: end.0.as_str().into(),
                to_seq: end.1,
            };
            let upgraded = sql.events_upgrade_range.execute(tx.as_mut(), range).await?;
            Ok::<_, StoreError>(Some((end, upgraded)))
        }
        .await;
        commit_or_rollback(tx, result).await
    }

    async fn recovery_point(&self) -> Result<Option<RecoveryPoint>, StoreError> {
        let rows =
            self.sql.workflow.recovery_point.query_once(self, workflow::RecoveryPoint {}).await?;
        rows.first()
            .map(|r| {
                let p = RecoveryColumns::read(r)?;
                Ok(RecoveryPoint {
                    run_id: p.run_id,
                    revision: p.seq,
                    at_ms: p.timestamp,
                    runs: p.runs,
                    events: p.events,
                })
            })
            .transpose()
    }

    async fn executions_page(&self, after: &str, limit: u32) -> Result<Vec<String>, StoreError> {
        let params = workflow::ExecutionsPage { after: after.into(), limit: i64::from(limit) };
        let rows = self.sql.workflow.executions_page.query_once(self, params).await?;
        rows.iter().map(|r| RunId::read(r).map(|r| r.run_id)).collect()
    }

    async fn runs_page(&self, query: &RunQuery) -> Result<Vec<RunSummary>, StoreError> {
        let (workflow, owner) = (query.workflow.clone(), query.owner.clone());
        let before = query.before.as_deref().unwrap_or(AFTER_EVERY_RUN_ID).to_owned();
        let limit = i64::from(query.limit.clamp(1, 1000));
        let sql = &self.sql.workflow;
        let rows = match query.status {
            None => {
                let params = workflow::RunsPageAll { workflow, owner, before, limit };
                page_read(self, sql.runs_page_all, params).await?
            }
            Some(status) => {
                let status = status.as_str().to_owned();
                let params = workflow::RunsPageStatus { status, workflow, owner, before, limit };
                page_read(self, sql.runs_page_status, params).await?
            }
        };
        rows.iter().map(run_summary).collect()
    }

    async fn runs_by_status(&self, cap: u32) -> Result<Vec<(ExecutionStatus, u64)>, StoreError> {
        let mut counts = Vec::new();
        for status in ExecutionStatus::ALL {
            let params =
                workflow::RunsCountStatus { status: status.as_str().into(), cap: cap.into() };
            let rows = page_read(self, self.sql.workflow.runs_count_status, params).await?;
            counts.push((status, first_count(&rows)?));
        }
        Ok(counts)
    }

    async fn sessions_all(&self) -> Result<Vec<String>, StoreError> {
        let rows =
            self.sql.workflow.sessions_all.query_once(self, workflow::SessionsAll {}).await?;
        rows.iter().map(|r| Id::read(r).map(|r| r.id)).collect()
    }

    async fn workflow_fingerprint(&self) -> Result<String, StoreError> {
        let row = self.sql.workflow.fingerprint.query_once(self, workflow::Fingerprint {}).await?;
        let row = row.first().ok_or_else(|| StoreError::internal("no fingerprint row"))?;
        let f = FingerprintColumns::read(row)?;
        Ok(format!(
            "{} runs (revisions {}), {} events, {} pending commands, {} Sessions (revisions {})",
            f.runs, f.run_revisions, f.events, f.pending, f.sessions, f.session_revisions
        ))
    }

    async fn session_delete(&self, id: &str) -> Result<(), StoreError> {
        self.sql
            .workflow
            .session_delete
            .execute_once(self, workflow::SessionDelete { id: id.into() })
            .await
            .map(|_| ())
    }

    async fn execution_delete(&self, run_id: &str) -> Result<(), StoreError> {
        self.sql
            .workflow
            .execution_delete
            .execute_once(self, workflow::ExecutionDelete { run_id: run_id.into() })
            .await
            .map(|_| ())
    }

    async fn execution_delete_in(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<RunDeleted>, StoreError> {
        let sql = self.sql.workflow;
        if sql
            .execution_lock
            .query_opt(tx, workflow::ExecutionLock { run_id: run_id.into() })
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let counts =
            sql.run_counts.query_one(tx, workflow::RunCounts { run_id: run_id.into() }).await?;
        let RunCountColumns { events, commands } = RunCountColumns::read(&counts)?;
        sql.dispatch_delete_for_run
            .execute(tx, workflow::DispatchDeleteForRun { run_id: run_id.into() })
            .await?;
        let sessions_unbound = sql
            .sessions_unbind_run
            .execute(tx, workflow::SessionsUnbindRun { run_id: run_id.into(), now })
            .await?;
        sql.execution_delete
            .execute(tx, workflow::ExecutionDelete { run_id: run_id.into() })
            .await?;
        Ok(Some(RunDeleted { events, commands, sessions_unbound }))
    }

    async fn executions_finished_before(
        &self,
        tx: &mut dyn Transaction,
        workflow_id: &str,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let params = workflow::ExecutionsFinished {
            workflow_id: workflow_id.into(),
            before,
            limit: limit.into(),
        };
        let rows = self.sql.workflow.executions_finished.query(tx, params).await?;
        rows.iter().map(|r| RunId::read(r).map(|r| r.run_id)).collect()
    }

    async fn sessions_idle_before(
        &self,
        tx: &mut dyn Transaction,
        workflow_id: Option<&str>,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let limit = i64::from(limit);
        let sql = self.sql.workflow;
        let rows = match workflow_id {
            Some(w) => {
                sql.sessions_idle_of_workflow
                    .query(
                        tx,
                        workflow::SessionsIdleOfWorkflow { workflow_id: w.into(), before, limit },
                    )
                    .await?
            }
            None => {
                sql.sessions_idle_unbound
                    .query(tx, workflow::SessionsIdleUnbound { before, limit })
                    .await?
            }
        };
        rows.iter().map(|r| Id::read(r).map(|r| r.id)).collect()
    }

    async fn session_delete_in(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .sql
            .workflow
            .session_delete
            .execute(tx, workflow::SessionDelete { id: id.into() })
            .await?
            > 0)
    }

    async fn execution_adopt_in(
        &self,
        tx: &mut dyn Transaction,
        run_id: &str,
        owner: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .sql
            .workflow
            .execution_adopt
            .execute(tx, workflow::ExecutionAdopt { run_id: run_id.into(), owner: owner.into() })
            .await?
            > 0)
    }

    async fn session_adopt_in(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        owner: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = workflow::SessionAdopt { id: id.into(), owner: owner.into(), now };
        Ok(self.sql.workflow.session_adopt.execute(tx, params).await? > 0)
    }
}

/// A bound after every run id this runtime makes (lowercase hexadecimal UUIDs), standing in for
/// "no keyset yet" so one statement serves every page.
const AFTER_EVERY_RUN_ID: &str = "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz";

fn run_summary(r: &jadpo_core::Row) -> Result<RunSummary, StoreError> {
    let r = RunSummaryColumns::read(r)?;
    let status = ExecutionStatus::parse(&r.status)
        .ok_or_else(|| StoreError::internal(format!("unknown run status {:?}", r.status)))?;
    Ok(RunSummary {
        run_id: r.run_id,
        workflow_id: r.workflow_id,
        workflow_version: r.workflow_version,
        status,
        revision: r.revision,
        current_node: r.current_node_id,
        owner: r.owner,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

crate::columns! {
    /// `WorkflowSql::commands_of_run`.
    struct CommandColumns {
        id: String,
        seq: i64,
        node_id: String,
        r#type: String,
        payload: serde_json::Value,
        status: String,
        idempotency_key: Option<String>,
        created_at: DateTime<Utc>,
        processed_at: Option<DateTime<Utc>>,
    }
    /// `WorkflowSql::legacy_event_ids`.
    struct EventIdColumns { seq: u64, id: String }
    /// `WorkflowSql::session_export`.
    struct SessionColumns {
        id: String,
        user_id: String,
        context: serde_json::Value,
        active_run_id: Option<String>,
        revision: i64,
        context_revision: i64,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        owner: Option<String>,
    }
    /// `WorkflowSql::verify_revisions`.
    struct RevisionColumns { run_id: String, revision: i64, last_seq: i64 }
    /// `WorkflowSql::verify_event_ids`.
    struct EventIdCounts { pairs: i64, ids: i64 }
    /// `WorkflowSql::events_page_end`.
    struct RunSeq { run_id: String, seq: i64 }
    /// `WorkflowSql::recovery_point`.
    struct RecoveryColumns { run_id: String, seq: i64, timestamp: i64, runs: i64, events: i64 }
    /// `WorkflowSql::fingerprint`.
    struct FingerprintColumns {
        runs: i64,
        run_revisions: i64,
        events: i64,
        pending: i64,
        sessions: i64,
        session_revisions: i64,
    }
    /// `WorkflowSql::run_counts`.
    struct RunCountColumns { events: u64, commands: u64 }
    /// A run's summary (`WorkflowSql::runs_page_all`, `runs_page_status`).
    struct RunSummaryColumns {
        run_id: String,
        workflow_id: String,
        workflow_version: String,
        status: String,
        revision: u64,
        current_node_id: Option<String>,
        owner: Option<String>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}
