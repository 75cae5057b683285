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
use jadpo_core::sql::{Row, SqlValue};
use jadpo_core::transaction::{Transaction, TransactionalStore, commit_or_rollback};

use crate::store::SqlStore;
use crate::tables::StepSql;

fn stored_step(r: &Row) -> Result<StoredStep, StoreError> {
    let step_no = r.get_i64("step_no")?;
    let sealed = match (r.get_opt_bytes("sealed_answer")?, r.get_opt_str("sealing_key_id")?) {
        (Some(bytes), Some(key)) => Some((bytes.to_vec(), key.to_owned())),
        _ => None,
    };
    Ok(StoredStep {
        step_no: u32::try_from(step_no)
            .map_err(|_| StoreError::invalid(format!("step_no {step_no}")))?,
        operation: r.get_str("operation")?.to_owned(),
        fingerprint: r.get_opt_str("request_fingerprint")?.map(str::to_owned),
        idempotency_key: r.get_str("idempotency_key")?.to_owned(),
        first_sent_at: r.get_timestamp("first_sent_at")?,
        sent_at: r.get_timestamp("sent_at")?,
        answered_at: r.get_opt_timestamp("answered_at")?,
        sealed_answer: sealed,
        encoding: r.get_opt_i64("encoding")?,
    })
}

fn record_view(r: &Row, steps: Vec<StoredStep>) -> Result<StepRecordView, StoreError> {
    let mode = r.get_str("mode")?;
    Ok(StepRecordView {
        run_key: r.get_str("run_key")?.to_owned(),
        action: r.get_str("action")?.to_owned(),
        build: r.get_str("build")?.to_owned(),
        step_shape: r.get_str("step_shape")?.to_owned(),
        mode: StepMode::parse(mode)
            .ok_or_else(|| StoreError::invalid(format!("step record mode {mode:?}")))?,
        first_started_at: r.get_timestamp("first_started_at")?,
        runner_generation: r.get_i64("runner_generation")?,
        lease_expires_at: r.get_timestamp("lease_expires_at")?,
        diverged: r.get_bool("diverged")?,
        divergence: r.get_opt_str("divergence")?.map(str::to_owned),
        finished_at: r.get_opt_timestamp("finished_at")?,
        alerted_at: r.get_opt_timestamp("alerted_at")?,
        steps,
    })
}

async fn steps_of(
    sql: &StepSql,
    tx: &mut dyn Transaction,
    run_key: &str,
) -> Result<Vec<StoredStep>, StoreError> {
    sql.steps_of.query(tx, [run_key.into()]).await?.iter().map(stored_step).collect()
}

/// The grant for a run this transaction could neither create nor take over.
fn refused(row: &Row) -> Result<RunGrant, StoreError> {
    if row.get_opt_timestamp("finished_at")?.is_some() {
        return Ok(RunGrant::Finished);
    }
    if row.get_bool("diverged")? {
        let reason = row.get_opt_str("divergence")?.unwrap_or("diverged").to_owned();
        return Ok(RunGrant::Diverged { reason });
    }
    Ok(RunGrant::Held { until: row.get_timestamp("lease_expires_at")? })
}

/// A new run's record: its key, handler, build, mode, start and lease.
fn insert_params(s: &RunStart<'_>) -> [SqlValue; 6] {
    [
        s.run_key.into(),
        s.action.into(),
        s.build.into(),
        s.mode.as_str().into(),
        s.now.into(),
        s.lease_until.into(),
    ]
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
            let take = [s.run_key.into(), s.now.into(), s.lease_until.into()];
            let Some(row) = sql.run_take_over.query_opt(tx, take).await? else {
                let row = sql.run_get.query_one(tx, [s.run_key.into()]).await?;
                return refused(&row);
            };
            (row, steps_of(sql, tx, s.run_key).await?)
        }
    };
    Ok(RunGrant::Acquired {
        generation: row.get_i64("runner_generation")?,
        first_started_at: row.get_timestamp("first_started_at")?,
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
    let generation = row.get_i64("runner_generation")?;
    let first = StepSent { generation, ..*first };
    Ok(record_sent(sql, tx, &first).await?.then_some(generation))
}

async fn record_sent(
    sql: &StepSql,
    tx: &mut dyn Transaction,
    s: &StepSent<'_>,
) -> Result<bool, StoreError> {
    let fence = [s.run_key.into(), s.generation.into(), s.shape.into(), s.lease_until.into()];
    if sql.run_fence.execute(tx, fence).await? == 0 {
        return Ok(false);
    }
    let params = [
        s.run_key.into(),
        i64::from(s.step_no).into(),
        s.operation.into(),
        s.fingerprint.map_or(SqlValue::Null, SqlValue::from),
        s.idempotency_key.into(),
        s.now.into(),
        s.generation.into(),
    ];
    sql.step_upsert.execute(tx, params).await?;
    Ok(true)
}

/// An answer's columns: run key, step number, sealed answer, its key's id, encoding, when.
fn answer_params(a: &StepAnswered<'_>) -> [SqlValue; 6] {
    let (answer, key) = match a.sealed {
        Some((bytes, key)) => (SqlValue::Bytes(bytes.to_vec()), SqlValue::from(key)),
        None => (SqlValue::Null, SqlValue::Null),
    };
    let encoding = match a.sealed {
        Some(_) => i64::from(SEALED_JSON.number).into(),
        None => SqlValue::Null,
    };
    [a.run_key.into(), i64::from(a.step_no).into(), answer, key, encoding, a.now.into()]
}

fn unfinished_alert(r: &Row) -> Result<Alert, StoreError> {
    let started = r.get_timestamp("first_started_at")?;
    let detail = if r.get_bool("diverged")? {
        format!(
            "run of {:?} started {started} diverged: {}",
            r.get_str("action")?,
            r.get_opt_str("divergence")?.unwrap_or("no reason recorded")
        )
    } else {
        format!("run of {:?} started {started} has not finished", r.get_str("action")?)
    };
    Ok(Alert { kind: "steps.unfinished", item: r.get_str("run_key")?.to_owned(), detail })
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
            let params = [
                start.run_key.into(),
                start.action.into(),
                start.build.into(),
                first.shape.into(),
                start.mode.as_str().into(),
                start.now.into(),
                start.lease_until.into(),
                i64::from(first.step_no).into(),
                first.operation.into(),
                first.fingerprint.map_or(SqlValue::Null, SqlValue::from),
                first.idempotency_key.into(),
            ];
            let rows = one.query_once(self, params).await?;
            return rows.first().map(|r| r.get_i64("runner_generation")).transpose();
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
        let [run_key, step_no, answer, key, encoding, now] = answer_params(answered);
        let params = [run_key, step_no, answer, key, encoding, now, answered.generation.into()];
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
                let [run, step_no, answer, key, encoding, at] = answer_params(answered);
                let params =
                    [run, step_no, answer, key, encoding, at, generation.into(), now.into()];
                return Ok(one.execute(tx, params).await? == 1);
            }
            self.step_answer_in(tx, answered).await?;
        }
        let params = [run_key.into(), generation.into(), now.into()];
        Ok(sql.run_finish.execute(tx, params).await? == 1)
    }

    async fn step_run_release(
        &self,
        run_key: &str,
        generation: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [run_key.into(), generation.into(), now.into()];
        Ok(self.sql.steps.run_release.execute_once(self, params).await? == 1)
    }

    async fn step_leases_release_all(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        self.sql.steps.runs_release_all.execute_once(self, [now.into()]).await
    }

    async fn step_run_diverge(
        &self,
        run_key: &str,
        generation: i64,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let params = [run_key.into(), generation.into(), reason.into()];
        Ok(self.sql.steps.run_diverge.execute_once(self, params).await? == 1)
    }

    async fn step_run_get(&self, run_key: &str) -> Result<Option<StepRecordView>, StoreError> {
        let sql = self.sql.steps;
        let Some(row) = sql.run_get.query_once(self, [run_key.into()]).await?.pop() else {
            return Ok(None);
        };
        let steps = sql.steps_of.query_once(self, [run_key.into()]).await?;
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
        let params = [started_before.into(), now.into(), i64::from(limit).into()];
        let rows = self.sql.steps.unfinished_alerts.query(tx, params).await?;
        rows.iter().map(unfinished_alert).collect()
    }
}
