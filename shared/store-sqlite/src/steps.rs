//! Step-record statements (SQLite, times in Unix epoch milliseconds). SQLite has one writer, so
//! a fence by generation and the write after it cannot interleave with a take-over.

use jadpo_store_sql::tables::steps;
use jadpo_store_sql::{StepSql, sql};

/// The step-record statements.
pub(crate) static STEPS: StepSql = StepSql {
    run_insert: sql!(
        steps::RunInsert,
        "INSERT INTO jadpo_step_records (run_key, action, build, step_shape, mode, \
        first_started_at, runner_generation, lease_expires_at) \
        VALUES ($run_key, $action, $build, '[]', $mode, $now, 1, $lease_until) ON CONFLICT (run_key) DO NOTHING \
        RETURNING runner_generation, first_started_at",
    ),
    // No data-modifying common table expressions: the role runs its three statements.
    run_start_sending: None,
    run_take_over: sql!(
        steps::RunTakeOver,
        "UPDATE jadpo_step_records SET runner_generation = runner_generation + 1, \
        lease_expires_at = $lease_until WHERE run_key = $run_key AND finished_at IS NULL AND NOT diverged \
        AND lease_expires_at <= $now RETURNING runner_generation, first_started_at",
    ),
    run_get: sql!(steps::RunGet, "SELECT * FROM jadpo_step_records WHERE run_key = $run_key"),
    steps_of: sql!(
        steps::StepsOf,
        "SELECT run_key, step_no, operation, request_fingerprint, idempotency_key, \
        first_sent_at, sent_at, runner_generation, answered_at, sealed_answer, sealing_key_id, \
        encoding FROM jadpo_steps WHERE run_key = $run_key ORDER BY step_no",
    ),
    run_fence: sql!(
        steps::RunFence,
        "UPDATE jadpo_step_records SET step_shape = $step_shape, lease_expires_at = $lease_until \
        WHERE run_key = $run_key \
        AND runner_generation = $runner_generation AND finished_at IS NULL AND NOT diverged",
    ),
    step_upsert: sql!(
        steps::StepUpsert,
        "INSERT INTO jadpo_steps (run_key, step_no, operation, request_fingerprint, \
        idempotency_key, first_sent_at, sent_at, runner_generation) \
        VALUES ($run_key, $step_no, $operation, $request_fingerprint, $idempotency_key, $now, $now, $runner_generation) ON CONFLICT (run_key, step_no) DO UPDATE \
        SET sent_at = excluded.sent_at, runner_generation = excluded.runner_generation",
    ),
    step_answer: sql!(
        steps::StepAnswer,
        "UPDATE jadpo_steps SET sealed_answer = $sealed_answer, sealing_key_id = $sealing_key_id, encoding = $encoding, \
        answered_at = $now WHERE run_key = $run_key AND step_no = $step_no",
    ),
    step_answer_fenced: sql!(
        steps::StepAnswerFenced,
        "UPDATE jadpo_steps SET sealed_answer = $sealed_answer, sealing_key_id = $sealing_key_id, encoding = $encoding, \
        answered_at = $now WHERE run_key = $run_key AND step_no = $step_no AND EXISTS (SELECT 1 \
        FROM jadpo_step_records WHERE run_key = $run_key AND runner_generation = $runner_generation \
        AND finished_at IS NULL AND NOT diverged)",
    ),
    run_finish: sql!(
        steps::RunFinish,
        "UPDATE jadpo_step_records SET finished_at = $now WHERE run_key = $run_key \
        AND runner_generation = $runner_generation AND finished_at IS NULL AND NOT diverged",
    ),
    run_finish_answering: None,
    run_release: sql!(
        steps::RunRelease,
        "UPDATE jadpo_step_records SET lease_expires_at = $now WHERE run_key = $run_key \
        AND runner_generation = $runner_generation AND finished_at IS NULL",
    ),
    runs_release_all: sql!(
        steps::RunsReleaseAll,
        "UPDATE jadpo_step_records SET lease_expires_at = $now \
        WHERE finished_at IS NULL AND lease_expires_at > $now",
    ),
    run_diverge: sql!(
        steps::RunDiverge,
        "UPDATE jadpo_step_records SET diverged = 1, divergence = $divergence WHERE run_key = $run_key \
        AND runner_generation = $runner_generation AND finished_at IS NULL",
    ),
    unfinished_alerts: sql!(
        steps::UnfinishedAlerts,
        "UPDATE jadpo_step_records SET alerted_at = $now WHERE run_key IN (\
        SELECT run_key FROM jadpo_step_records WHERE finished_at IS NULL AND alerted_at IS NULL \
        AND first_started_at < $started_before ORDER BY first_started_at, run_key LIMIT $limit) \
        RETURNING run_key, action, first_started_at, diverged, divergence",
    ),
    delete_finished_steps: sql!(
        steps::DeleteFinishedSteps,
        "DELETE FROM jadpo_steps WHERE run_key IN (SELECT run_key FROM jadpo_step_records \
        WHERE finished_at < $cutoff ORDER BY finished_at, run_key LIMIT $limit)",
    ),
    delete_finished_runs: sql!(
        steps::DeleteFinishedRuns,
        "DELETE FROM jadpo_step_records WHERE run_key IN (SELECT run_key FROM jadpo_step_records \
        WHERE finished_at < $cutoff ORDER BY finished_at, run_key LIMIT $limit)",
    ),
};
