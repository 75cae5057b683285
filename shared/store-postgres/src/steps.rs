//! Step-record statements (PostgreSQL). A fence is an `UPDATE` by generation, which also locks
//! the run's row until the transaction ends, so a take-over waits for a write under way.

use jadpo_store_sql::{Statement, StepSql};

/// The step-record statements.
pub(crate) static STEPS: StepSql = StepSql {
    run_insert: Statement::new(
        "INSERT INTO jadpo_step_records (run_key, action, build, step_shape, mode, \
        first_started_at, runner_generation, lease_expires_at) \
        VALUES ($1, $2, $3, '[]', $4, $5, 1, $6) ON CONFLICT (run_key) DO NOTHING \
        RETURNING runner_generation, first_started_at",
    ),
    run_start_sending: Some(Statement::new(
        "WITH run AS (INSERT INTO jadpo_step_records (run_key, action, build, step_shape, mode, \
        first_started_at, runner_generation, lease_expires_at) \
        VALUES ($1, $2, $3, $4, $5, $6, 1, $7) ON CONFLICT (run_key) DO NOTHING \
        RETURNING runner_generation), \
        step AS (INSERT INTO jadpo_steps (run_key, step_no, operation, request_fingerprint, \
        idempotency_key, first_sent_at, sent_at, runner_generation) \
        SELECT $1, $8, $9, $10, $11, $6, $6, runner_generation FROM run) \
        SELECT runner_generation FROM run",
    )),
    run_take_over: Statement::new(
        "UPDATE jadpo_step_records SET runner_generation = runner_generation + 1, \
        lease_expires_at = $3 WHERE run_key = $1 AND finished_at IS NULL AND NOT diverged \
        AND lease_expires_at <= $2 RETURNING runner_generation, first_started_at",
    ),
    run_get: Statement::new("SELECT * FROM jadpo_step_records WHERE run_key = $1"),
    steps_of: Statement::new(
        "SELECT run_key, step_no, operation, request_fingerprint, idempotency_key, \
        first_sent_at, sent_at, runner_generation, answered_at, sealed_answer, sealing_key_id, \
        encoding FROM jadpo_steps WHERE run_key = $1 ORDER BY step_no",
    ),
    run_fence: Statement::new(
        "UPDATE jadpo_step_records SET step_shape = $3, lease_expires_at = $4 \
        WHERE run_key = $1 \
        AND runner_generation = $2 AND finished_at IS NULL AND NOT diverged",
    ),
    step_upsert: Statement::new(
        "INSERT INTO jadpo_steps (run_key, step_no, operation, request_fingerprint, \
        idempotency_key, first_sent_at, sent_at, runner_generation) \
        VALUES ($1, $2, $3, $4, $5, $6, $6, $7) ON CONFLICT (run_key, step_no) DO UPDATE \
        SET sent_at = excluded.sent_at, runner_generation = excluded.runner_generation",
    ),
    step_answer: Statement::new(
        "UPDATE jadpo_steps SET sealed_answer = $3, sealing_key_id = $4, encoding = $5, \
        answered_at = $6 WHERE run_key = $1 AND step_no = $2",
    ),
    step_answer_fenced: Statement::new(
        "UPDATE jadpo_steps SET sealed_answer = $3, sealing_key_id = $4, encoding = $5, \
        answered_at = $6 WHERE run_key = $1 AND step_no = $2 AND EXISTS (SELECT 1 \
        FROM jadpo_step_records WHERE run_key = $1 AND runner_generation = $7 \
        AND finished_at IS NULL AND NOT diverged FOR UPDATE)",
    ),
    run_finish: Statement::new(
        "UPDATE jadpo_step_records SET finished_at = $3 WHERE run_key = $1 \
        AND runner_generation = $2 AND finished_at IS NULL AND NOT diverged",
    ),
    run_finish_answering: Some(Statement::new(
        "WITH step AS (UPDATE jadpo_steps SET sealed_answer = $3, sealing_key_id = $4, \
        encoding = $5, answered_at = $6 WHERE run_key = $1 AND step_no = $2 AND EXISTS (\
        SELECT 1 FROM jadpo_step_records WHERE run_key = $1 AND runner_generation = $7 \
        AND finished_at IS NULL AND NOT diverged) RETURNING step_no) \
        UPDATE jadpo_step_records SET finished_at = $8 WHERE run_key = $1 \
        AND runner_generation = $7 AND finished_at IS NULL AND NOT diverged \
        AND EXISTS (SELECT 1 FROM step)",
    )),
    run_release: Statement::new(
        "UPDATE jadpo_step_records SET lease_expires_at = $3 WHERE run_key = $1 \
        AND runner_generation = $2 AND finished_at IS NULL",
    ),
    runs_release_all: Statement::new(
        "UPDATE jadpo_step_records SET lease_expires_at = $1 \
        WHERE finished_at IS NULL AND lease_expires_at > $1",
    ),
    run_diverge: Statement::new(
        "UPDATE jadpo_step_records SET diverged = TRUE, divergence = $3 WHERE run_key = $1 \
        AND runner_generation = $2 AND finished_at IS NULL",
    ),
    unfinished_alerts: Statement::new(
        "UPDATE jadpo_step_records SET alerted_at = $2 WHERE run_key IN (\
        SELECT run_key FROM jadpo_step_records WHERE finished_at IS NULL AND alerted_at IS NULL \
        AND first_started_at < $1 ORDER BY first_started_at, run_key LIMIT $3 \
        FOR UPDATE SKIP LOCKED) \
        RETURNING run_key, action, first_started_at, diverged, divergence",
    ),
    delete_finished_steps: Statement::new(
        "DELETE FROM jadpo_steps WHERE run_key IN (SELECT run_key FROM jadpo_step_records \
        WHERE finished_at < $1 ORDER BY finished_at, run_key LIMIT $2 FOR UPDATE SKIP LOCKED)",
    ),
    delete_finished_runs: Statement::new(
        "DELETE FROM jadpo_step_records WHERE run_key IN (SELECT run_key FROM jadpo_step_records \
        WHERE finished_at < $1 ORDER BY finished_at, run_key LIMIT $2 FOR UPDATE SKIP LOCKED)",
    ),
};
