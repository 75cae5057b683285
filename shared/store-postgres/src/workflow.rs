//! The workflow tables' statements in PostgreSQL's: typed and JSONB columns, rows locked with `FOR UPDATE`.

use chrono::{DateTime, Utc};
use jadpo_core::{Row, SqlValue, StoreError};
use jadpo_store_sql::sql;
use jadpo_store_sql::tables::workflow;
use jadpo_store_sql::{ExecutionLayout, WorkflowSql, execution_head, ms};
use jadpo_workflow::state::{ExecutionState, ExecutionStatus};
use serde_json::Value;

/// The workflow statements.
pub(crate) static SQL: WorkflowSql = WorkflowSql {
    execution_lock: sql!(
        workflow::ExecutionLock,
        "SELECT revision FROM workflow_executions WHERE run_id = $run_id FOR UPDATE",
    ),
    execution_get: sql!(
        workflow::ExecutionGet,
        "SELECT run_id, workflow_id, workflow_version, status, current_node_id, revision, input, \
        data, error, cancellation_state, loop_state, created_at, updated_at FROM workflow_executions \
        WHERE run_id = $run_id",
    ),
    execution_owner: sql!(
        workflow::ExecutionOwner,
        "SELECT owner FROM workflow_executions WHERE run_id = $run_id"
    ),
    event_insert: sql!(
        workflow::EventInsert,
        "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp, actor) \
        VALUES ($id, $run_id, $seq, $event_type, $payload, $timestamp, $actor)",
    ),
    events_insert: sql!(
        workflow::EventsInsert,
        "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp, actor) \
        SELECT e->>'id', $run_id::text, (e->>'seq')::integer, e->>'type', e->'payload', \
        (e->>'timestamp')::bigint, $actor::text FROM jsonb_array_elements($events::jsonb) AS e",
    ),
    event_actors: sql!(
        workflow::EventActors,
        "SELECT seq, actor FROM workflow_events WHERE run_id = $run_id AND actor IS NOT NULL \
        ORDER BY seq",
    ),
    events_list: sql!(
        workflow::EventsList,
        "SELECT seq, type, payload, timestamp FROM workflow_events WHERE run_id = $run_id \
        ORDER BY seq",
    ),
    events_page: sql!(
        workflow::EventsPage,
        "SELECT seq, type, payload, timestamp, actor FROM workflow_events \
        WHERE run_id = $run_id AND seq > $after_seq ORDER BY seq LIMIT $limit",
    ),
    command_insert: sql!(
        workflow::CommandInsert,
        "INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, \
        idempotency_key, created_at) VALUES ($id, $run_id, $seq, $node_id, $command_type, $payload, $idempotency_key, $created_at)",
    ),
    command_ack: sql!(
        workflow::CommandAck,
        "UPDATE outbox_commands SET status = $status, processed_at = $processed_at \
        WHERE id = $id AND status IN ('pending', 'claimed')",
    ),
    session_lock: sql!(
        workflow::SessionLock,
        "SELECT user_id, revision FROM sessions WHERE id = $session_id FOR UPDATE"
    ),
    session_bind: sql!(
        workflow::SessionBind,
        "UPDATE sessions SET active_run_id = $run_id, updated_at = $now, revision = revision + 1 \
        WHERE id = $session_id AND revision = $expected_revision",
    ),
    session_insert: sql!(
        workflow::SessionInsert,
        "INSERT INTO sessions (id, user_id, context, created_at, updated_at, owner) \
        VALUES ($id, $user_id, $context, $now, $now, $owner)",
    ),
    session_get: sql!(
        workflow::SessionGet,
        "SELECT id, user_id, context, active_run_id, revision, context_revision, owner \
        FROM sessions WHERE id = $id",
    ),
    session_update_context: sql!(
        workflow::SessionUpdateContext,
        "UPDATE sessions SET context = $context, updated_at = $now, revision = revision + 1, \
        context_revision = context_revision + $context_changed WHERE id = $id AND user_id = $user_id AND revision = $expected_revision",
    ),
    // Committed without waiting for the WAL flush: the lease only keeps a second executor from
    // running the capability meanwhile, and what is exactly once is the transition, which checks
    // the lease in its own synced transaction. A lease the server loses in a crash is one that
    // expired early: another executor may run the (idempotency-keyed) capability again, and the
    // first one's transition is refused.
    run_lease_take: sql!(
        workflow::RunLeaseTake,
        "INSERT INTO execution_leases (run_id, worker_id, lease_id, expires_at) \
        SELECT $run_id::text, $worker_id::text, $lease_id::text, $expires_at::bigint \
        FROM (SELECT set_config('synchronous_commit', 'off', true)) AS advisory \
        ON CONFLICT (run_id) DO UPDATE SET worker_id = excluded.worker_id, \
        lease_id = excluded.lease_id, expires_at = excluded.expires_at \
        WHERE execution_leases.expires_at <= $now RETURNING lease_id",
    ),
    run_lease_extend: sql!(
        workflow::RunLeaseExtend,
        "UPDATE execution_leases SET expires_at = $expires_at \
        WHERE run_id = $run_id AND lease_id = $lease_id AND expires_at > $now",
    ),
    run_lease_give_up: sql!(
        workflow::RunLeaseGiveUp,
        "DELETE FROM execution_leases WHERE run_id = $run_id AND lease_id = $lease_id",
    ),
    run_lease_fence: sql!(
        workflow::RunLeaseFence,
        "SELECT 1 AS live FROM execution_leases \
        WHERE run_id = $run_id AND lease_id = $lease_id AND expires_at > $now FOR UPDATE",
    ),
    run_lease_end: sql!(
        workflow::RunLeaseEnd,
        "DELETE FROM execution_leases WHERE run_id = $run_id AND lease_id = $lease_id AND expires_at > $now \
        RETURNING 1 AS live",
    ),
    run_lease_renew: sql!(
        workflow::RunLeaseRenew,
        "UPDATE execution_leases SET expires_at = $expires_at \
        WHERE run_id = $run_id AND lease_id = $lease_id AND expires_at > $now RETURNING 1 AS live",
    ),
    runnable: sql!(
        workflow::Runnable,
        "SELECT e.run_id FROM workflow_executions e \
        LEFT JOIN execution_leases l ON l.run_id = e.run_id \
        WHERE e.status IN ('running', 'cancelling') AND (l.run_id IS NULL OR l.expires_at <= $now) \
        ORDER BY e.updated_at LIMIT $limit",
    ),
    leases_expired: sql!(
        workflow::LeasesExpired,
        "SELECT run_id, worker_id, lease_id, expires_at FROM execution_leases \
        WHERE expires_at <= $now ORDER BY expires_at LIMIT $limit",
    ),
    lease_clear_expired: sql!(
        workflow::LeaseClearExpired,
        "DELETE FROM execution_leases WHERE run_id = $run_id AND lease_id = $lease_id AND expires_at <= $now",
    ),
    commands_resend_for_run: sql!(
        workflow::CommandsResendForRun,
        "INSERT INTO jadpo_command_dispatch (command_id, run_id, enqueued_at) \
        SELECT id, run_id, $now FROM outbox_commands WHERE run_id = $run_id AND status IN ('pending', 'claimed') \
        ON CONFLICT (command_id) DO UPDATE SET enqueued_at = excluded.enqueued_at \
        RETURNING command_id",
    ),
    command_get: sql!(
        workflow::CommandGet,
        "SELECT id, run_id, node_id, type, payload, status, idempotency_key \
        FROM outbox_commands WHERE id = $id",
    ),
    commands_claim_due: sql!(
        workflow::CommandsClaimDue,
        "INSERT INTO jadpo_command_dispatch (command_id, run_id, enqueued_at) \
        SELECT c.id, c.run_id, $now FROM outbox_commands c \
        JOIN workflow_executions e ON e.run_id = c.run_id \
        LEFT JOIN jadpo_command_dispatch d ON d.command_id = c.id \
        WHERE c.status IN ('pending', 'claimed') AND e.status IN ('running', 'cancelling') \
        AND c.run_id NOT LIKE 'jadpo-verify-%' \
        AND (d.command_id IS NULL OR d.enqueued_at < $lost_before) ORDER BY c.created_at LIMIT $limit \
        ON CONFLICT (command_id) DO UPDATE SET enqueued_at = excluded.enqueued_at \
        WHERE jadpo_command_dispatch.enqueued_at < $lost_before RETURNING command_id",
    ),
    // Advice to the relay, committed without waiting for the WAL flush, as the deliveries'
    // mark (`pipeline.rs`).
    command_mark_enqueued: sql!(
        workflow::CommandMarkEnqueued,
        "INSERT INTO jadpo_command_dispatch (command_id, run_id, enqueued_at) \
        SELECT $command_id::text, $run_id::text, $now::timestamptz FROM (SELECT set_config('synchronous_commit', 'off', true)) AS advisory \
        ON CONFLICT (command_id) DO UPDATE SET enqueued_at = excluded.enqueued_at",
    ),
    verify_revisions: sql!(
        workflow::VerifyRevisions,
        "SELECT e.run_id, e.revision, m.last_seq FROM workflow_executions e \
        JOIN (SELECT run_id, max(seq) AS last_seq FROM workflow_events GROUP BY run_id) m \
        ON m.run_id = e.run_id WHERE e.revision <> m.last_seq \
        AND NOT EXISTS (SELECT 1 FROM workflow_events x WHERE x.run_id = e.run_id \
        AND x.id <> x.run_id || ':' || x.seq::text) ORDER BY e.run_id",
    ),
    verify_event_ids: sql!(
        workflow::VerifyEventIds,
        "SELECT (SELECT count(*) FROM (SELECT run_id, seq FROM workflow_events \
        GROUP BY run_id, seq HAVING count(*) > 1) d) AS pairs, \
        (SELECT count(*) FROM (SELECT id FROM workflow_events GROUP BY id \
        HAVING count(*) > 1) i) AS ids",
    ),
    events_page_end: sql!(
        workflow::EventsPageEnd,
        "SELECT run_id, seq FROM workflow_events WHERE (run_id, seq) > ($after_run::text, $after_seq::integer) \
        ORDER BY run_id, seq LIMIT $limit",
    ),
    events_upgrade_range: sql!(
        workflow::EventsUpgradeRange,
        "UPDATE workflow_events SET payload = jsonb_build_object('seq', seq, 'type', type, \
        'payload', payload, 'timestamp', timestamp) \
        WHERE (run_id, seq) > ($from_run::text, $from_seq::integer) AND (run_id, seq) <= ($to_run::text, $to_seq::integer) \
        AND NOT (jsonb_typeof(payload) = 'object' AND payload ? 'payload' \
        AND payload -> 'seq' IS NOT DISTINCT FROM to_jsonb(seq) AND payload -> 'type' IS NOT DISTINCT FROM to_jsonb(type))",
    ),
    legacy_event_ids: sql!(
        workflow::LegacyEventIds,
        "SELECT seq, id FROM workflow_events WHERE run_id = $run_id AND id <> run_id || ':' || seq::text \
        ORDER BY seq",
    ),
    recovery_point: sql!(
        workflow::RecoveryPoint,
        "SELECT e.run_id, e.seq, e.timestamp, \
        (SELECT count(*) FROM workflow_executions) AS runs, \
        (SELECT count(*) FROM workflow_events) AS events \
        FROM workflow_events e ORDER BY e.timestamp DESC, e.seq DESC LIMIT 1",
    ),
    executions_page: sql!(
        workflow::ExecutionsPage,
        "SELECT run_id FROM workflow_executions WHERE run_id > $after ORDER BY run_id LIMIT $limit",
    ),
    runs_page_all: sql!(
        workflow::RunsPageAll,
        "SELECT run_id, workflow_id, workflow_version, status, current_node_id, revision, owner, created_at, updated_at FROM workflow_executions \
        WHERE ($workflow::text IS NULL OR workflow_id = $workflow) AND ($owner::text IS NULL OR owner = $owner) AND run_id < $before \
        ORDER BY run_id DESC LIMIT $limit",
    ),
    runs_page_status: sql!(
        workflow::RunsPageStatus,
        "SELECT run_id, workflow_id, workflow_version, status, current_node_id, revision, owner, created_at, updated_at FROM workflow_executions \
        WHERE status = $status AND ($workflow::text IS NULL OR workflow_id = $workflow) AND ($owner::text IS NULL OR owner = $owner) \
        AND run_id < $before ORDER BY run_id DESC LIMIT $limit",
    ),
    runs_count_status: sql!(
        workflow::RunsCountStatus,
        "SELECT count(*) AS n FROM (SELECT 1 FROM workflow_executions WHERE status = $status \
        ORDER BY status, run_id LIMIT $cap) AS c",
    ),
    fingerprint: sql!(
        workflow::Fingerprint,
        "SELECT (SELECT count(*) FROM workflow_executions) AS runs, \
        (SELECT CAST(coalesce(sum(revision), 0) AS BIGINT) FROM workflow_executions) AS run_revisions, \
        (SELECT count(*) FROM workflow_events) AS events, \
        (SELECT count(*) FROM outbox_commands WHERE status = 'pending') AS pending, \
        (SELECT count(*) FROM sessions) AS sessions, \
        (SELECT CAST(coalesce(sum(revision), 0) AS BIGINT) FROM sessions) AS session_revisions",
    ),
    sessions_all: sql!(workflow::SessionsAll, "SELECT id FROM sessions ORDER BY id"),
    session_delete: sql!(workflow::SessionDelete, "DELETE FROM sessions WHERE id = $id"),
    execution_delete: sql!(
        workflow::ExecutionDelete,
        "DELETE FROM workflow_executions WHERE run_id = $run_id"
    ),
    run_counts: sql!(
        workflow::RunCounts,
        "SELECT (SELECT count(*) FROM workflow_events WHERE run_id = $run_id) AS events, \
        (SELECT count(*) FROM outbox_commands WHERE run_id = $run_id) AS commands",
    ),
    dispatch_delete_for_run: sql!(
        workflow::DispatchDeleteForRun,
        "DELETE FROM jadpo_command_dispatch WHERE run_id = $run_id"
    ),
    sessions_unbind_run: sql!(
        workflow::SessionsUnbindRun,
        "UPDATE sessions SET active_run_id = NULL, revision = revision + 1, updated_at = $now \
        WHERE active_run_id = $run_id",
    ),
    execution_adopt: sql!(
        workflow::ExecutionAdopt,
        "UPDATE workflow_executions SET owner = $owner WHERE run_id = $run_id AND owner IS NULL",
    ),
    session_adopt: sql!(
        workflow::SessionAdopt,
        "UPDATE sessions SET owner = $owner, revision = revision + 1, updated_at = $now \
        WHERE id = $id AND owner IS NULL",
    ),
    executions_finished: sql!(
        workflow::ExecutionsFinished,
        "SELECT run_id FROM workflow_executions WHERE workflow_id = $workflow_id \
        AND status IN ('completed', 'failed', 'cancelled', 'cancellation_failed') AND updated_at < $before \
        ORDER BY updated_at, run_id LIMIT $limit",
    ),
    sessions_idle_of_workflow: sql!(
        workflow::SessionsIdleOfWorkflow,
        "SELECT s.id FROM sessions s JOIN workflow_executions e ON e.run_id = s.active_run_id \
        WHERE e.workflow_id = $workflow_id AND e.status IN ('completed', 'failed', 'cancelled', 'cancellation_failed') \
        AND s.updated_at < $before ORDER BY s.updated_at, s.id LIMIT $limit",
    ),
    sessions_idle_unbound: sql!(
        workflow::SessionsIdleUnbound,
        "SELECT id FROM sessions WHERE active_run_id IS NULL AND updated_at < $before \
        ORDER BY updated_at, id LIMIT $limit",
    ),
    commands_of_run: sql!(
        workflow::CommandsOfRun,
        "SELECT id, seq, node_id, type, payload, status, idempotency_key, created_at, \
        processed_at FROM outbox_commands WHERE run_id = $run_id ORDER BY seq",
    ),
    command_import: sql!(
        workflow::CommandImport,
        "INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, status, \
        idempotency_key, created_at, processed_at) VALUES ($id, $run_id, $seq, $node_id, $command_type, $payload, $status, $idempotency_key, $created_at, $processed_at)",
    ),
    session_export: sql!(
        workflow::SessionExport,
        "SELECT id, user_id, context, active_run_id, revision, context_revision, \
        created_at, updated_at, owner FROM sessions WHERE id = $id",
    ),
    session_import: sql!(
        workflow::SessionImport,
        "INSERT INTO sessions (id, user_id, context, active_run_id, revision, \
        context_revision, created_at, updated_at, owner) \
        VALUES ($id, $user_id, $context, $active_run_id, $revision, $context_revision, $created_at, $updated_at, $owner)",
    ),
};

/// The execution row in typed and JSONB columns: after [`execution_head`]'s six, `$7` input, `$8`
/// data, `$9` error, `$10` cancellation_state, `$11` loop_state, `$12` created_at, `$13`
/// updated_at; the insert's `$14` is the owner, the update's `$14` the revision it replaces.
pub(crate) const EXECUTION: ExecutionLayout = ExecutionLayout {
    insert: INSERT,
    update: UPDATE,
    params: execution_params,
    from_row: execution_from_row,
};

const INSERT: &str = "INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, \
        current_node_id, revision, input, data, error, cancellation_state, loop_state, created_at, \
        updated_at, owner) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

const UPDATE: &str = "UPDATE workflow_executions SET workflow_id = $2, workflow_version = $3, status = $4, \
        current_node_id = $5, revision = $6, input = $7, data = $8, error = $9, \
        cancellation_state = $10, loop_state = $11, created_at = $12, updated_at = $13 \
        WHERE run_id = $1 AND revision = $14";

fn json_or_null(v: Option<&Value>) -> SqlValue {
    v.map_or(SqlValue::Null, |v| SqlValue::Json(v.clone()))
}

fn execution_params(s: &ExecutionState) -> Result<Vec<SqlValue>, StoreError> {
    let mut p = execution_head(s)?;
    p.extend([
        SqlValue::Json(s.input.clone()),
        SqlValue::Json(Value::Object(s.data.clone())),
        json_or_null(s.error.as_ref()),
        json_or_null(s.cancellation_state.as_ref()),
        s.loop_state.as_ref().map_or(SqlValue::Null, |l| SqlValue::Json(Value::Object(l.clone()))),
        ms(s.created_at).into(),
        ms(s.updated_at).into(),
    ]);
    Ok(p)
}

jadpo_store_sql::columns! {
    /// A run's execution row (`WorkflowSql::execution_get`): typed and JSONB columns.
    struct ExecutionColumns {
        run_id: String,
        workflow_id: String,
        workflow_version: String,
        status: String,
        current_node_id: Option<String>,
        revision: u64,
        input: Value,
        data: Option<Value>,
        error: Option<Value>,
        cancellation_state: Option<Value>,
        loop_state: Option<Value>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

fn execution_from_row(r: &Row) -> Result<ExecutionState, StoreError> {
    let r = ExecutionColumns::read(r)?;
    let object = |v: Option<Value>| v.and_then(|v| v.as_object().cloned());
    Ok(ExecutionState {
        status: ExecutionStatus::parse(&r.status)
            .ok_or_else(|| StoreError::internal(format!("unknown status {:?}", r.status)))?,
        run_id: r.run_id,
        workflow_id: r.workflow_id,
        workflow_version: r.workflow_version,
        current_node_id: r.current_node_id,
        revision: r.revision,
        input: r.input,
        data: object(r.data).unwrap_or_default(),
        error: r.error,
        cancellation_state: r.cancellation_state,
        loop_state: object(r.loop_state),
        created_at: r.created_at.timestamp_millis(),
        updated_at: r.updated_at.timestamp_millis(),
    })
}
