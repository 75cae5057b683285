//! `StepSql`: the slots of the step-record role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_step_records` and `jadpo_steps`. Every write
    /// after the first is fenced by `runner_generation`.
    pub struct StepSql {
        /// Creates a run's record (generation 1) unless it exists; returns `runner_generation,
        /// first_started_at` when it created it.
        run_insert: RunInsert(
            run_key: String,
            action: String,
            build: String,
            mode: String,
            now: DateTime<Utc>,
            lease_until: DateTime<Utc>,
        ),
        /// Creates a run's record (generation 1) with its first step sent, in one statement,
        /// unless the record exists; returns `runner_generation` when it created it. A dialect
        /// without data-modifying common table expressions leaves it out, and the role runs
        /// `run_insert`, `run_fence` and `step_upsert` in one transaction instead.
        run_start_sending: RunStartSending(
            run_key: String,
            action: String,
            build: String,
            step_shape: String,
            mode: String,
            now: DateTime<Utc>,
            lease_until: DateTime<Utc>,
            step_no: i64,
            operation: String,
            request_fingerprint: Option<String>,
            idempotency_key: String,
        ): optional,
        /// Takes over an unfinished, undiverged run whose lease expired (generation + 1); returns
        /// `runner_generation, first_started_at` when it did.
        run_take_over: RunTakeOver(run_key: String, now: DateTime<Utc>, lease_until: DateTime<Utc>),
        /// The run's record (every column).
        run_get: RunGet(run_key: String),
        /// The run's steps (every column), in order.
        steps_of: StepsOf(run_key: String),
        /// Sets the run's shape and renews its lease if the generation still holds it (and
        /// locks its row).
        run_fence: RunFence(
            run_key: String,
            runner_generation: i64,
            step_shape: String,
            lease_until: DateTime<Utc>,
        ),
        /// Records a step as sent: inserted the first time, its last send and generation after.
        step_upsert: StepUpsert(
            run_key: String,
            step_no: i64,
            operation: String,
            request_fingerprint: Option<String>,
            idempotency_key: String,
            now: DateTime<Utc>,
            runner_generation: i64,
        ),
        /// Records a step's answer.
        step_answer: StepAnswer(
            run_key: String,
            step_no: i64,
            sealed_answer: Option<Vec<u8>>,
            sealing_key_id: Option<String>,
            encoding: Option<i64>,
            now: DateTime<Utc>,
        ),
        /// Records a step's answer if the generation still holds the run (and locks its row):
        /// one statement, with no transaction of its own to open and commit.
        step_answer_fenced: StepAnswerFenced(
            run_key: String,
            step_no: i64,
            sealed_answer: Option<Vec<u8>>,
            sealing_key_id: Option<String>,
            encoding: Option<i64>,
            now: DateTime<Utc>,
            runner_generation: i64,
        ),
        /// Marks the run finished if the generation still holds it.
        run_finish: RunFinish(run_key: String, runner_generation: i64, now: DateTime<Utc>),
        /// Records the last step's answer and marks the run finished if the generation still
        /// holds it, in one statement (the row count is the run's); a dialect without
        /// data-modifying common table expressions leaves it out, and the role runs
        /// `step_answer` and `run_finish` in the transaction instead.
        run_finish_answering: RunFinishAnswering(
            run_key: String,
            step_no: i64,
            sealed_answer: Option<Vec<u8>>,
            sealing_key_id: Option<String>,
            encoding: Option<i64>,
            answered_at: DateTime<Utc>,
            runner_generation: i64,
            now: DateTime<Utc>,
        ): optional,
        /// Ends the generation's lease now.
        run_release: RunRelease(run_key: String, runner_generation: i64, now: DateTime<Utc>),
        /// Ends every unfinished run's lease now (a process proven alone on the store, at start).
        runs_release_all: RunsReleaseAll(now: DateTime<Utc>),
        /// Marks the run diverged with the reason, if the generation still holds it.
        run_diverge: RunDiverge(run_key: String, runner_generation: i64, divergence: String),
        /// Returns `run_key, action, first_started_at, diverged, divergence` of unfinished runs
        /// started before `started_before` whose alert is not raised, marking it raised.
        unfinished_alerts: UnfinishedAlerts(
            started_before: DateTime<Utc>,
            now: DateTime<Utc>,
            limit: i64,
        ),
        /// The steps of up to `limit` runs finished before `cutoff`.
        delete_finished_steps: DeleteFinishedSteps(cutoff: DateTime<Utc>, limit: i64),
        /// Up to `limit` runs finished before `cutoff` (the same runs, deleted after their steps).
        delete_finished_runs: DeleteFinishedRuns(cutoff: DateTime<Utc>, limit: i64),
    }
}
