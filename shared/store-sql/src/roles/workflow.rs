//! The workflow store implemented once over each adapter's own SQL: the nine steps of a
//! transition in one transaction, Sessions, run leases and commands. The execution row's
//! physical layout differs per dialect ([`crate::ExecutionLayout`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use jadpo_core::error::{StoreError, StoreErrorKind};
use jadpo_core::ports::TransitionError;
use jadpo_core::ports::WorkflowStore;
use jadpo_core::sql::Row;
use jadpo_workflow::rows::CommandRow;
use jadpo_workflow::rows::ExecutionLease;
use jadpo_workflow::rows::SessionRecord;
use jadpo_workflow::rows::TransitionWrite;
use jadpo_workflow::rows::{LeaseEnd, LeaseFence};
use jadpo_workflow::state::{ExecutionState, RuntimeEvent};

use crate::dialect::{ExecutionLayout, ms};
use crate::rows::RunId;
use crate::store::SqlStore;
use crate::tables::WorkflowSql;
use crate::tables::workflow;
use jadpo_core::transaction::{Transaction, TransactionalStore};

async fn write_steps(
    sql: &WorkflowSql,
    layout: &ExecutionLayout,
    tx: &mut dyn Transaction,
    w: &TransitionWrite<'_>,
) -> Result<(), TransitionError> {
    let t = w.transition;
    if let Some(fence) = &w.lease {
        check_lease(sql, tx, w.run_id, fence).await?;
    }
    // 1–3: compare the revision and write the materialized execution, in one statement: a new
    // run's insert fails on its key if the run exists, an update is guarded by the revision.
    let mut params = (layout.params)(&t.state)?;
    match w.expected_revision {
        None => {
            params.push(w.owner.into());
            if let Err(e) = tx.execute(layout.insert, &params).await {
                return Err(match e.kind() {
                    StoreErrorKind::Conflict => stale(w, None),
                    _ => e.into(),
                });
            }
        }
        Some(expected) => {
            let guard = i64::try_from(expected)
                .map_err(|_| StoreError::invalid("revision out of range"))?;
            params.push(guard.into());
            if tx.execute(layout.update, &params).await? != 1 {
                // Refused: read what the revision is, for the caller's message (on PostgreSQL a
                // refused update leaves the transaction usable).
                let current = sql
                    .execution_lock
                    .query_opt(tx, workflow::ExecutionLock { run_id: w.run_id.into() })
                    .await?;
                let actual = current.as_ref().map(Revision::read).transpose()?.map(|r| r.revision);
                return Err(stale(w, actual.map(|r| u64::try_from(r).unwrap_or(0))));
            }
        }
    }
    // 4: the events, in one statement.
    if !t.events.is_empty() {
        let events: Vec<Value> = t
            .events
            .iter()
            .map(|e| {
                json!({"id": e.id(w.run_id), "seq": e.seq, "type": e.event_type,
                       "payload": e.stored(), "timestamp": e.timestamp})
            })
            .collect();
        let actor = w.actor.map(ToOwned::to_owned);
        let params =
            workflow::EventsInsert { run_id: w.run_id.into(), actor, events: Value::Array(events) };
        sql.events_insert.execute(tx, params).await?;
    }
    // 5: new commands.
    let now = ms(t.state.updated_at);
    for c in &t.commands {
        let seq = i64::try_from(c.seq).map_err(|_| StoreError::invalid("seq out of range"))?;
        let key = c.idempotency_key.clone();
        let params = workflow::CommandInsert {
            id: c.id.as_str().into(),
            run_id: w.run_id.into(),
            seq,
            node_id: c.node_id.as_str().into(),
            command_type: c.command_type.as_str().into(),
            payload: c.payload.clone(),
            idempotency_key: key,
            created_at: now,
        };
        sql.command_insert.execute(tx, params).await?;
    }
    // 6: acknowledgements.
    for a in &t.acks {
        if sql
            .command_ack
            .execute(
                tx,
                workflow::CommandAck {
                    id: a.command_id.as_str().into(),
                    status: a.status.into(),
                    processed_at: now,
                },
            )
            .await?
            != 1
        {
            return Err(TransitionError::CommandNotPending(a.command_id.clone()));
        }
    }
    // 7–9: the Session binding.
    if let Some(s) = &w.session {
        let row = sql
            .session_lock
            .query_opt(tx, workflow::SessionLock { session_id: s.session_id.as_str().into() })
            .await?;
        let row = row.as_ref().map(SessionLock::read).transpose()?;
        let Some(row) = row.filter(|r| r.user_id == s.user_id) else {
            return Err(TransitionError::SessionNotFound(s.session_id.clone()));
        };
        let actual = row.revision;
        if actual != s.expected_revision {
            return Err(TransitionError::StaleSession {
                session_id: s.session_id.clone(),
                expected: s.expected_revision,
                actual,
            });
        }
        let params = workflow::SessionBind {
            session_id: s.session_id.as_str().into(),
            run_id: w.run_id.into(),
            now,
            expected_revision: s.expected_revision,
        };
        if sql.session_bind.execute(tx, params).await? != 1 {
            return Err(TransitionError::StaleSession {
                session_id: s.session_id.clone(),
                expected: s.expected_revision,
                actual,
            });
        }
    }
    Ok(())
}

/// Checks the writer's lease in the transition's transaction, and holds, renews or ends it.
async fn check_lease(
    sql: &WorkflowSql,
    tx: &mut dyn Transaction,
    run_id: &str,
    fence: &LeaseFence,
) -> Result<(), TransitionError> {
    let (run, lease_id, now) = (run_id.to_owned(), fence.lease_id.clone(), fence.now_ms);
    let live = match fence.end {
        LeaseEnd::Hold => {
            let params = workflow::RunLeaseFence { run_id: run, lease_id, now };
            sql.run_lease_fence.query_opt(tx, params).await?
        }
        LeaseEnd::Release => {
            let params = workflow::RunLeaseEnd { run_id: run, lease_id, now };
            sql.run_lease_end.query_opt(tx, params).await?
        }
        LeaseEnd::Renew { expires_at } => {
            let params = workflow::RunLeaseRenew { run_id: run, lease_id, now, expires_at };
            sql.run_lease_renew.query_opt(tx, params).await?
        }
    };
    match live {
        Some(_) => Ok(()),
        None => Err(TransitionError::LeaseLost(run_id.to_owned())),
    }
}

/// The refusal of a transition decided on a revision the run is no longer at (`actual`: where it
/// is, `None` if it does not exist or, for a new run that lost to another, is not known).
fn stale(w: &TransitionWrite<'_>, actual: Option<u64>) -> TransitionError {
    TransitionError::StaleRevision {
        run_id: w.run_id.to_owned(),
        expected: w.expected_revision,
        actual,
    }
}

fn session_from_row(r: &Row) -> Result<SessionRecord, StoreError> {
    let s = SessionColumns::read(r)?;
    Ok(SessionRecord {
        id: s.id,
        user_id: s.user_id,
        context: s.context,
        active_run_id: s.active_run_id,
        revision: s.revision,
        context_revision: s.context_revision,
        owner: s.owner,
    })
}

crate::columns! {
    /// The revision `WorkflowSql::execution_lock` read.
    struct Revision { revision: i64 }
    /// `WorkflowSql::session_lock`.
    struct SessionLock { user_id: String, revision: i64 }
    /// A Session (`WorkflowSql::session_get`).
    struct SessionColumns {
        id: String,
        user_id: String,
        context: Value,
        active_run_id: Option<String>,
        revision: i64,
        context_revision: i64,
        owner: Option<String>,
    }
    /// `WorkflowSql::event_actors`.
    struct EventActor { seq: u64, actor: String }
    /// An event of a run's log (`WorkflowSql::events_list`; `events_page` adds `actor`).
    struct EventColumns { seq: u64, r#type: String, payload: Value, timestamp: i64 }
    /// `WorkflowSql::events_page`'s actor.
    struct Actor { actor: Option<String> }
    /// `WorkflowSql::execution_owner`.
    struct Owner { owner: Option<String> }
    /// `WorkflowSql::leases_expired`.
    struct LeaseColumns { run_id: String, worker_id: String, lease_id: String, expires_at: i64 }
    /// A command id (`WorkflowSql::commands_claim_due`, `commands_resend_for_run`).
    struct CommandId { command_id: String }
    /// `WorkflowSql::command_get`.
    struct CommandColumns {
        id: String,
        run_id: String,
        node_id: String,
        r#type: String,
        payload: Value,
        status: String,
        idempotency_key: Option<String>,
    }
}

fn event(r: &Row) -> Result<RuntimeEvent, StoreError> {
    let e = EventColumns::read(r)?;
    Ok(RuntimeEvent::from_stored(e.seq, &e.r#type, e.payload, e.timestamp))
}

#[async_trait]
impl<C: TransactionalStore> WorkflowStore for SqlStore<C> {
    async fn commit_transition(&self, write: &TransitionWrite<'_>) -> Result<(), TransitionError> {
        let mut tx = self.begin().await?;
        match write_steps(self.sql.workflow, &self.sql.execution, tx.as_mut(), write).await {
            Ok(()) => tx.commit().await.map_err(|e| match e.kind() {
                jadpo_core::StoreErrorKind::Conflict => TransitionError::StaleRevision {
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
                    TransitionError::Store(s)
                        if s.kind() == jadpo_core::StoreErrorKind::Conflict =>
                    {
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

    async fn write_transition_in(
        &self,
        tx: &mut dyn Transaction,
        write: &TransitionWrite<'_>,
    ) -> Result<(), TransitionError> {
        write_steps(self.sql.workflow, &self.sql.execution, tx, write).await
    }

    async fn execution_get(&self, run_id: &str) -> Result<Option<ExecutionState>, StoreError> {
        let rows = self
            .sql
            .workflow
            .execution_get
            .query_once(self, workflow::ExecutionGet { run_id: run_id.into() })
            .await?;
        rows.first().map(self.sql.execution.from_row).transpose()
    }

    async fn execution_event_actors(
        &self,
        run_id: &str,
    ) -> Result<std::collections::BTreeMap<u64, String>, StoreError> {
        let rows = self
            .sql
            .workflow
            .event_actors
            .query_once(self, workflow::EventActors { run_id: run_id.into() })
            .await?;
        rows.iter()
            .map(|r| {
                let a = EventActor::read(r)?;
                Ok((a.seq, a.actor))
            })
            .collect()
    }

    async fn execution_events_page(
        &self,
        run_id: &str,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<(RuntimeEvent, Option<String>)>, StoreError> {
        let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
        let params = workflow::EventsPage {
            run_id: run_id.into(),
            after_seq: after,
            limit: i64::from(limit),
        };
        let rows = self.sql.workflow.events_page.query_once(self, params).await?;
        rows.iter().map(|r| Ok((event(r)?, Actor::read(r)?.actor))).collect()
    }

    async fn execution_events(&self, run_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        let rows = self
            .sql
            .workflow
            .events_list
            .query_once(self, workflow::EventsList { run_id: run_id.into() })
            .await?;
        rows.iter().map(event).collect()
    }

    async fn session_create(
        &self,
        id: &str,
        user_id: &str,
        context: &Value,
        now: DateTime<Utc>,
        owner: Option<&str>,
    ) -> Result<(), StoreError> {
        let params = workflow::SessionInsert {
            id: id.into(),
            user_id: user_id.into(),
            context: context.clone(),
            now,
            owner: owner.map(ToOwned::to_owned),
        };
        self.sql.workflow.session_insert.execute_once(self, params).await.map(|_| ())
    }

    async fn execution_owner(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        let rows = self
            .sql
            .workflow
            .execution_owner
            .query_once(self, workflow::ExecutionOwner { run_id: run_id.into() })
            .await?;
        Ok(match rows.first() {
            Some(r) => Owner::read(r)?.owner,
            None => None,
        })
    }

    async fn session_get(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let rows = self
            .sql
            .workflow
            .session_get
            .query_once(self, workflow::SessionGet { id: id.into() })
            .await?;
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
        let params = workflow::SessionUpdateContext {
            id: id.into(),
            user_id: user_id.into(),
            context: context.clone(),
            now,
            expected_revision,
            context_changed: i64::from(context_changed),
        };
        Ok(self.sql.workflow.session_update_context.execute_once(self, params).await? == 1)
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
        let params = workflow::RunLeaseTake {
            run_id: run_id.into(),
            worker_id: worker_id.into(),
            lease_id: lease_id.as_str().into(),
            expires_at,
            now: now_ms,
        };
        let rows = self.sql.workflow.run_lease_take.query_once(self, params).await?;
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
        let params = workflow::RunLeaseExtend {
            run_id: run_id.into(),
            lease_id: lease_id.into(),
            expires_at,
            now: now_ms,
        };
        Ok(self.sql.workflow.run_lease_extend.execute_once(self, params).await? == 1)
    }

    async fn run_lease_give_up(&self, run_id: &str, lease_id: &str) -> Result<bool, StoreError> {
        Ok(self
            .sql
            .workflow
            .run_lease_give_up
            .execute_once(
                self,
                workflow::RunLeaseGiveUp { run_id: run_id.into(), lease_id: lease_id.into() },
            )
            .await?
            == 1)
    }

    async fn runs_runnable(&self, now_ms: i64, limit: u32) -> Result<Vec<String>, StoreError> {
        let rows = self
            .sql
            .workflow
            .runnable
            .query_once(self, workflow::Runnable { now: now_ms, limit: i64::from(limit) })
            .await?;
        rows.iter().map(|r| RunId::read(r).map(|r| r.run_id)).collect()
    }

    async fn run_leases_expired(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ExecutionLease>, StoreError> {
        let params = workflow::LeasesExpired { now: now_ms, limit: i64::from(limit) };
        let rows = self.sql.workflow.leases_expired.query_once(self, params).await?;
        rows.iter()
            .map(|r| {
                let l = LeaseColumns::read(r)?;
                Ok(ExecutionLease {
                    run_id: l.run_id,
                    worker_id: l.worker_id,
                    lease_id: l.lease_id,
                    expires_at: l.expires_at,
                })
            })
            .collect()
    }

    async fn run_lease_clear_expired(
        &self,
        run_id: &str,
        lease_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let params = workflow::LeaseClearExpired {
            run_id: run_id.into(),
            lease_id: lease_id.into(),
            now: now_ms,
        };
        Ok(self.sql.workflow.lease_clear_expired.execute_once(self, params).await? == 1)
    }

    async fn commands_resend_for_run(
        &self,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        let sql = self.sql.workflow.commands_resend_for_run;
        let rows = sql
            .query_once(self, workflow::CommandsResendForRun { run_id: run_id.into(), now })
            .await?;
        rows.iter().map(|r| CommandId::read(r).map(|c| c.command_id)).collect()
    }

    async fn command_get(&self, id: &str) -> Result<Option<CommandRow>, StoreError> {
        let rows = self
            .sql
            .workflow
            .command_get
            .query_once(self, workflow::CommandGet { id: id.into() })
            .await?;
        rows.first()
            .map(|r| {
                let c = CommandColumns::read(r)?;
                Ok(CommandRow {
                    id: c.id,
                    run_id: c.run_id,
                    node_id: c.node_id,
                    command_type: c.r#type,
                    payload: c.payload,
                    status: c.status,
                    idempotency_key: c.idempotency_key,
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
        let sql = self.sql.workflow.commands_claim_due;
        let rows =
            sql.query_once(self, workflow::CommandsClaimDue { now, lost_before, limit }).await?;
        rows.iter().map(|r| CommandId::read(r).map(|c| c.command_id)).collect()
    }

    async fn command_mark_enqueued(
        &self,
        id: &str,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let sql = self.sql.workflow.command_mark_enqueued;
        sql.execute_advisory(
            self,
            workflow::CommandMarkEnqueued { command_id: id.into(), run_id: run_id.into(), now },
        )
        .await
        .map(|_| ())
    }
}
