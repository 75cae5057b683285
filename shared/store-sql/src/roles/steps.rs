//! The step-record role implemented once over each adapter's own SQL. A run is acquired in one
//! transaction (insert, else take over an expired lease, else report why not); each later write
//! first fences on the run's row by generation in the same transaction, so a runner that lost
//! the run changes nothing.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::alert::Alert;
use jadpo_core::model::encoding::SEALED_JSON;
use jadpo_core::model::step::{
    RunGrant, RunStart, StepAnswered, StepMode, StepRecordView, StepSent, StoredStep,
};
use jadpo_core::ports::StepStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore, commit_or_rollback};

use crate::store::SqlStore;
use crate::tables::StepSql;
use crate::tables::steps;

crate::columns! {
    /// A step (`StepSql::steps_of`: every column).
    struct StepColumns {
        step_no: u32,
        operation: String,
        request_fingerprint: Option<String>,
        idempotency_key: String,
        first_sent_at: DateTime<Utc>,
        sent_at: DateTime<Utc>,
        answered_at: Option<DateTime<Utc>>,
        sealed_answer: Option<Vec<u8>>,
        sealing_key_id: Option<String>,
        encoding: Option<i64>,
    }
    /// A run's record (`StepSql::run_get`: every column).
    struct RecordColumns {
        run_key: String,
        action: String,
        build: String,
        step_shape: String,
        mode: String,
        first_started_at: DateTime<Utc>,
        runner_generation: i64,
        lease_expires_at: DateTime<Utc>,
        diverged: bool,
        divergence: Option<String>,
        finished_at: Option<DateTime<Utc>>,
        alerted_at: Option<DateTime<Utc>>,
    }
    /// A record just created or taken over (`StepSql::run_insert`, `run_take_over`).
    struct Granted { runner_generation: i64, first_started_at: DateTime<Utc> }
    /// A record created with its first step (`StepSql::run_start_sending`).
    struct Generation { runner_generation: i64 }
    /// `StepSql::unfinished_alerts`.
    struct UnfinishedColumns {
        run_key: String,
        action: String,
        first_started_at: DateTime<Utc>,
        diverged: bool,
        divergence: Option<String>,
    }
}

fn stored_step(r: &Row) -> Result<StoredStep, StoreError> {
    let c = StepColumns::read(r)?;
    let sealed = match (c.sealed_answer, c.sealing_key_id) {
        (Some(bytes), Some(key)) => Some((bytes, key)),
        _ => None,
    };
    Ok(StoredStep {
        step_no: c.step_no,
        operation: c.operation,
        fingerprint: c.request_fingerprint,
        idempotency_key: c.idempotency_key,
        first_sent_at: c.first_sent_at,
        sent_at: c.sent_at,
        answered_at: c.answered_at,
        sealed_answer: sealed,
        encoding: c.encoding,
    })
}

fn record_view(r: &Row, steps: Vec<StoredStep>) -> Result<StepRecordView, StoreError> {
    let r = RecordColumns::read(r)?;
    let mode = StepMode::parse(&r.mode)
        .ok_or_else(|| StoreError::invalid(format!("step record mode {:?}", r.mode)))?;
    Ok(StepRecordView {
        run_key: r.run_key,
        action: r.action,
        build: r.build,
        step_shape: r.step_shape,
        mode,
        first_started_at: r.first_started_at,
        runner_generation: r.runner_generation,
        lease_expires_at: r.lease_expires_at,
        diverged: r.diverged,
        divergence: r.divergence,
        finished_at: r.finished_at,
        alerted_at: r.alerted_at,
        steps,
    })
}

async fn steps_of(
    sql: &StepSql,
    tx: &mut dyn Transaction,
    run_key: &str,
) -> Result<Vec<StoredStep>, StoreError> {
    sql.steps_of
        .query(tx, steps::StepsOf { run_key: run_key.into() })
        .await?
        .iter()
        .map(stored_step)
        .collect()
}

/// The grant for a run this transaction could neither create nor take over.
fn refused(row: &Row) -> Result<RunGrant, StoreError> {
    let r = RecordColumns::read(row)?;
    if r.finished_at.is_some() {
        return Ok(RunGrant::Finished);
    }
    if r.diverged {
        let reason = r.divergence.unwrap_or_else(|| "diverged".to_owned());
        return Ok(RunGrant::Diverged { reason });
    }
    Ok(RunGrant::Held { until: r.lease_expires_at })
}

/// A new run's record: its key, handler, build, mode, start and lease.
fn insert_params(s: &RunStart<'_>) -> steps::RunInsert {
    steps::RunInsert {
        run_key: s.run_key.into(),
        action: s.action.into(),
        build: s.build.into(),
        mode: s.mode.as_str().into(),
        now: s.now,
        lease_until: s.lease_until,
    }
}

async fn acquire(
    sql: &StepSql,
    tx: &mut dyn Transaction,
    s: &RunStart<'_>,
) -> Result<RunGrant, StoreError> {
    let insert = insert_params(s);
    // A record just created has no steps yet: only a run taken over reads them.
    let (row, steps) = match sql.run_insert.query_opt(tx, insert).await? {
        Some(row) => (row, Vec::new()),
        None => {
            let take = steps::RunTakeOver {
                run_key: s.run_key.into(),
                now: s.now,
                lease_until: s.lease_until,
            };
            let Some(row) = sql.run_take_over.query_opt(tx, take).await? else {
                let row =
                    sql.run_get.query_one(tx, steps::RunGet { run_key: s.run_key.into() }).await?;
                return refused(&row);
            };
            (row, steps_of(sql, tx, s.run_key).await?)
        }
    };
    let granted = Granted::read(&row)?;
    Ok(RunGrant::Acquired {
        generation: granted.runner_generation,
        first_started_at: granted.first_started_at,
        steps,
    })
}

/// A new run's record and its first step sent, in `tx`; `None` (nothing written) if the record
/// exists.
async fn start_sending(
    sql: &StepSql,
    tx: &mut dyn Transaction,
    s: &RunStart<'_>,
    first: &StepSent<'_>,
) -> Result<Option<i64>, StoreError> {
    let insert = insert_params(s);
    let Some(row) = sql.run_insert.query_opt(tx, insert).await? else {
        return Ok(None);
    };
    let generation = Generation::read(&row)?.runner_generation;
    let first = StepSent { generation, ..*first };
    Ok(record_sent(sql, tx, &first).await?.then_some(generation))
}

async fn record_sent(
    sql: &StepSql,
    tx: &mut dyn Transaction,
    s: &StepSent<'_>,
) -> Result<bool, StoreError> {
    let fence = steps::RunFence {
        run_key: s.run_key.into(),
        runner_generation: s.generation,
        step_shape: s.shape.into(),
        lease_until: s.lease_until,
    };
    if sql.run_fence.execute(tx, fence).await? == 0 {
        return Ok(false);
    }
    let params = steps::StepUpsert {
        run_key: s.run_key.into(),
        step_no: i64::from(s.step_no),
        operation: s.operation.into(),
        request_fingerprint: s.fingerprint.map(ToOwned::to_owned),
        idempotency_key: s.idempotency_key.into(),
        now: s.now,
        runner_generation: s.generation,
    };
    sql.step_upsert.execute(tx, params).await?;
    Ok(true)
}

/// A step's answer as kept: the sealed bytes, their key's id and encoding (all `NULL` when
/// the answer is not kept).
struct KeptAnswer {
    sealed_answer: Option<Vec<u8>>,
    sealing_key_id: Option<String>,
    encoding: Option<i64>,
}

fn kept(a: &StepAnswered<'_>) -> KeptAnswer {
    KeptAnswer {
        sealed_answer: a.sealed.map(|(bytes, _)| bytes.to_vec()),
        sealing_key_id: a.sealed.map(|(_, key)| key.to_owned()),
        encoding: a.sealed.map(|_| i64::from(SEALED_JSON.number)),
    }
}

fn answer_params(a: &StepAnswered<'_>) -> steps::StepAnswer {
    let KeptAnswer { sealed_answer, sealing_key_id, encoding } = kept(a);
    steps::StepAnswer {
        run_key: a.run_key.into(),
        step_no: a.step_no.into(),
        sealed_answer,
        sealing_key_id,
        encoding,
        now: a.now,
    }
}

fn unfinished_alert(r: &Row) -> Result<Alert, StoreError> {
    let r = UnfinishedColumns::read(r)?;
    let started = r.first_started_at;
    let detail = if r.diverged {
        format!(
            "run of {:?} started {started} diverged: {}",
            r.action,
            r.divergence.as_deref().unwrap_or("no reason recorded")
        )
    } else {
        format!("run of {:?} started {started} has not finished", r.action)
    };
    Ok(Alert { kind: "steps.unfinished", item: r.run_key, detail })
}

#[async_trait]
impl<C: TransactionalStore> StepStore for SqlStore<C> {
    async fn step_run_acquire(&self, start: &RunStart<'_>) -> Result<RunGrant, StoreError> {
        let mut tx = self.begin().await?;
        let result = acquire(self.sql.steps, tx.as_mut(), start).await;
        commit_or_rollback(tx, result).await
    }

    async fn step_run_acquire_in(
        &self,
        tx: &mut dyn Transaction,
        start: &RunStart<'_>,
    ) -> Result<RunGrant, StoreError> {
        acquire(self.sql.steps, tx, start).await
    }

    async fn step_run_start_sending(
        &self,
        start: &RunStart<'_>,
        first: &StepSent<'_>,
    ) -> Result<Option<i64>, StoreError> {
        let sql = self.sql.steps;
        if let Some(one) = &sql.run_start_sending {
            let params = steps::RunStartSending {
                run_key: start.run_key.into(),
                action: start.action.into(),
                build: start.build.into(),
                step_shape: first.shape.into(),
                mode: start.mode.as_str().into(),
                now: start.now,
                lease_until: start.lease_until,
                step_no: i64::from(first.step_no),
                operation: first.operation.into(),
                request_fingerprint: first.fingerprint.map(ToOwned::to_owned),
                idempotency_key: first.idempotency_key.into(),
            };
            let rows = one.query_once(self, params).await?;
            return Ok(rows
                .first()
                .map(Generation::read)
                .transpose()?
                .map(|g| g.runner_generation));
        }
        let mut tx = self.begin().await?;
        let result = start_sending(sql, tx.as_mut(), start, first).await;
        commit_or_rollback(tx, result).await
    }

    async fn step_sent_in(
        &self,
        tx: &mut dyn Transaction,
        sent: &StepSent<'_>,
    ) -> Result<bool, StoreError> {
        record_sent(self.sql.steps, tx, sent).await
    }

    async fn step_sent(&self, sent: &StepSent<'_>) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let result = record_sent(self.sql.steps, tx.as_mut(), sent).await;
        commit_or_rollback(tx, result).await
    }

    async fn step_answered(&self, answered: &StepAnswered<'_>) -> Result<bool, StoreError> {
        let KeptAnswer { sealed_answer, sealing_key_id, encoding } = kept(answered);
        let params = steps::StepAnswerFenced {
            run_key: answered.run_key.into(),
            step_no: answered.step_no.into(),
            sealed_answer,
            sealing_key_id,
            encoding,
            now: answered.now,
            runner_generation: answered.generation,
        };
        Ok(self.sql.steps.step_answer_fenced.execute_once(self, params).await? == 1)
    }

    async fn step_answer_in(
        &self,
        tx: &mut dyn Transaction,
        answered: &StepAnswered<'_>,
    ) -> Result<(), StoreError> {
        if self.sql.steps.step_answer.execute(tx, answer_params(answered)).await? == 1 {
            Ok(())
        } else {
            Err(StoreError::invalid(format!(
                "step {} of run {:?} has no sent record to answer",
                answered.step_no, answered.run_key
            )))
        }
    }

    async fn step_run_finish(
        &self,
        tx: &mut dyn Transaction,
        run_key: &str,
        generation: i64,
        answered: Option<&StepAnswered<'_>>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let sql = self.sql.steps;
        if let Some(answered) = answered {
            if let Some(one) = &sql.run_finish_answering {
                let KeptAnswer { sealed_answer, sealing_key_id, encoding } = kept(answered);
                let params = steps::RunFinishAnswering {
                    run_key: answered.run_key.into(),
                    step_no: answered.step_no.into(),
                    sealed_answer,
                    sealing_key_id,
                    encoding,
                    answered_at: answered.now,
                    runner_generation: generation,
                    now,
                };
                return Ok(one.execute(tx, params).await? == 1);
            }
            self.step_answer_in(tx, answered).await?;
        }
        let params =
            steps::RunFinish { run_key: run_key.into(), runner_generation: generation, now };
        Ok(sql.run_finish.execute(tx, params).await? == 1)
    }

    async fn step_run_release(
        &self,
        run_key: &str,
        generation: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params =
            steps::RunRelease { run_key: run_key.into(), runner_generation: generation, now };
        Ok(self.sql.steps.run_release.execute_once(self, params).await? == 1)
    }

    async fn step_leases_release_all(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        self.sql.steps.runs_release_all.execute_once(self, steps::RunsReleaseAll { now }).await
    }

    async fn step_run_diverge(
        &self,
        run_key: &str,
        generation: i64,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let params = steps::RunDiverge {
            run_key: run_key.into(),
            runner_generation: generation,
            divergence: reason.into(),
        };
        Ok(self.sql.steps.run_diverge.execute_once(self, params).await? == 1)
    }

    async fn step_run_get(&self, run_key: &str) -> Result<Option<StepRecordView>, StoreError> {
        let sql = self.sql.steps;
        let Some(row) =
            sql.run_get.query_once(self, steps::RunGet { run_key: run_key.into() }).await?.pop()
        else {
            return Ok(None);
        };
        let steps =
            sql.steps_of.query_once(self, steps::StepsOf { run_key: run_key.into() }).await?;
        let steps = steps.iter().map(stored_step).collect::<Result<Vec<_>, _>>()?;
        record_view(&row, steps).map(Some)
    }

    async fn step_unfinished_alerts(
        &self,
        tx: &mut dyn Transaction,
        started_before: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError> {
        let params = steps::UnfinishedAlerts { started_before, now, limit: i64::from(limit) };
        let rows = self.sql.steps.unfinished_alerts.query(tx, params).await?;
        rows.iter().map(unfinished_alert).collect()
    }
}
