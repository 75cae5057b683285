//! `StepSql`: the slots of the step-record role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_step_records` and `jadpo_steps`. Every write
    /// after the first is fenced by `runner_generation`.
    pub struct StepSql {
        /// Creates a run's record (generation 1) unless it exists; returns `runner_generation,
        /// first_started_at` when it created it.
        run_insert(run_key, action, build, mode, now, lease_until),
        /// Creates a run's record (generation 1) with its first step sent, in one statement,
        /// unless the record exists; returns `runner_generation` when it created it. A dialect
        /// without data-modifying common table expressions leaves it out, and the role runs
        /// `run_insert`, `run_fence` and `step_upsert` in one transaction instead.
        run_start_sending(run_key, action, build, step_shape, mode, now, lease_until, step_no, operation, request_fingerprint, idempotency_key): optional,
        /// Takes over an unfinished, undiverged run whose lease expired (generation + 1); returns
        /// `runner_generation, first_started_at` when it did.
        run_take_over(run_key, now, lease_until),
        /// The run's record (every column).
        run_get(run_key),
        /// The run's steps (every column), in order.
        steps_of(run_key),
        /// Sets the run's shape and renews its lease if the generation still holds it (and
        /// locks its row).
        run_fence(run_key, runner_generation, step_shape, lease_until),
        /// Records a step as sent: inserted the first time, its last send and generation after.
        step_upsert(run_key, step_no, operation, request_fingerprint, idempotency_key, now, runner_generation),
        /// Records a step's answer.
        step_answer(run_key, step_no, sealed_answer, sealing_key_id, encoding, now),
        /// Records a step's answer if the generation still holds the run (and locks its row):
        /// one statement, with no transaction of its own to open and commit.
        step_answer_fenced(run_key, step_no, sealed_answer, sealing_key_id, encoding, now, runner_generation),
        /// Marks the run finished if the generation still holds it.
        run_finish(run_key, runner_generation, now),
        /// Records the last step's answer and marks the run finished if the generation still
        /// holds it, in one statement (the row count is the run's); a dialect without
        /// data-modifying common table expressions leaves it out, and the role runs
        /// `step_answer` and `run_finish` in the transaction instead.
        run_finish_answering(run_key, step_no, sealed_answer, sealing_key_id, encoding, answered_at, runner_generation, now): optional,
        /// Ends the generation's lease now.
        run_release(run_key, runner_generation, now),
        /// Ends every unfinished run's lease now (a process proven alone on the store, at start).
        runs_release_all(now),
        /// Marks the run diverged with the reason, if the generation still holds it.
        run_diverge(run_key, runner_generation, divergence),
        /// Returns `run_key, action, first_started_at, diverged, divergence` of unfinished runs
        /// started before `started_before` whose alert is not raised, marking it raised.
        unfinished_alerts(started_before, now, limit),
        /// The steps of up to `limit` runs finished before `cutoff`.
        delete_finished_steps(cutoff, limit),
        /// Up to `limit` runs finished before `cutoff` (the same runs, deleted after their steps).
        delete_finished_runs(cutoff, limit),
    }
}
