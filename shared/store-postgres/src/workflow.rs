//! The workflow tables' statements in PostgreSQL's: typed and JSONB columns, rows locked with `FOR UPDATE`.

use jadpo_core::model::workflow::state::{ExecutionState, ExecutionStatus};
use jadpo_core::{Row, SqlValue, StoreError};
use jadpo_store_sql::{ExecutionLayout, Statement, WorkflowSql, execution_head, ms};
use serde_json::{Map, Value};

/// The workflow statements.
pub(crate) static SQL: WorkflowSql = WorkflowSql {
    execution_lock: Statement::new(
        "SELECT revision FROM workflow_executions WHERE run_id = $1 FOR UPDATE",
    ),
    execution_get: Statement::new(
        "SELECT run_id, workflow_id, workflow_version, status, current_node_id, revision, input, \
        data, error, cancellation_state, loop_state, created_at, updated_at FROM workflow_executions \
        WHERE run_id = $1",
    ),
    execution_owner: Statement::new("SELECT owner FROM workflow_executions WHERE run_id = $1"),
    event_insert: Statement::new(
        "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp, actor) \
        VALUES ($1, $2, $3, $4, $5, $6, $7)",
    ),
    events_insert: Statement::new(
        "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp, actor) \
        SELECT e->>'id', $1::text, (e->>'seq')::integer, e->>'type', e->'payload', \
        (e->>'timestamp')::bigint, $2::text FROM jsonb_array_elements($3::jsonb) AS e",
    ),
    event_actors: Statement::new(
        "SELECT seq, actor FROM workflow_events WHERE run_id = $1 AND actor IS NOT NULL \
        ORDER BY seq",
    ),
    events_list: Statement::new(
        "SELECT seq, type, payload, timestamp FROM workflow_events WHERE run_id = $1 \
        ORDER BY seq",
    ),
    events_page: Statement::new(
        "SELECT seq, type, payload, timestamp, actor FROM workflow_events \
        WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    ),
    command_insert: Statement::new(
        "INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, \
        idempotency_key, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    ),
    command_ack: Statement::new(
        "UPDATE outbox_commands SET status = $2, processed_at = $3 \
        WHERE id = $1 AND status IN ('pending', 'claimed')",
    ),
    session_lock: Statement::new("SELECT user_id, revision FROM sessions WHERE id = $1 FOR UPDATE"),
    session_bind: Statement::new(
        "UPDATE sessions SET active_run_id = $2, updated_at = $3, revision = revision + 1 \
        WHERE id = $1 AND revision = $4",
    ),
    session_insert: Statement::new(
        "INSERT INTO sessions (id, user_id, context, created_at, updated_at, owner) \
        VALUES ($1, $2, $3, $4, $4, $5)",
    ),
    session_get: Statement::new(
        "SELECT id, user_id, context, active_run_id, revision, context_revision, owner \
        FROM sessions WHERE id = $1",
    ),
    session_update_context: Statement::new(
        "UPDATE sessions SET context = $3, updated_at = $4, revision = revision + 1, \
        context_revision = context_revision + $6 WHERE id = $1 AND user_id = $2 AND revision = $5",
    ),
    // Committed without waiting for the WAL flush: the lease only keeps a second executor from
    // running the capability meanwhile, and what is exactly once is the transition, which checks
    // the lease in its own synced transaction. A lease the server loses in a crash is one that
    // expired early: another executor may run the (idempotency-keyed) capability again, and the
    // first one's transition is refused.
    run_lease_take: Statement::new(
        "INSERT INTO execution_leases (run_id, worker_id, lease_id, expires_at) \
        SELECT $1::text, $2::text, $3::text, $4::bigint \
        FROM (SELECT set_config('synchronous_commit', 'off', true)) AS advisory \
        ON CONFLICT (run_id) DO UPDATE SET worker_id = excluded.worker_id, \
        lease_id = excluded.lease_id, expires_at = excluded.expires_at \
        WHERE execution_leases.expires_at <= $5 RETURNING lease_id",
    ),
    run_lease_extend: Statement::new(
        "UPDATE execution_leases SET expires_at = $3 \
        WHERE run_id = $1 AND lease_id = $2 AND expires_at > $4",
    ),
    run_lease_give_up: Statement::new(
        "DELETE FROM execution_leases WHERE run_id = $1 AND lease_id = $2",
    ),
    run_lease_fence: Statement::new(
        "SELECT 1 AS live FROM execution_leases \
        WHERE run_id = $1 AND lease_id = $2 AND expires_at > $3 FOR UPDATE",
    ),
    run_lease_end: Statement::new(
        "DELETE FROM execution_leases WHERE run_id = $1 AND lease_id = $2 AND expires_at > $3 \
        RETURNING 1 AS live",
    ),
    run_lease_renew: Statement::new(
        "UPDATE execution_leases SET expires_at = $4 \
        WHERE run_id = $1 AND lease_id = $2 AND expires_at > $3 RETURNING 1 AS live",
    ),
    runnable: Statement::new(
        "SELECT e.run_id FROM workflow_executions e \
        LEFT JOIN execution_leases l ON l.run_id = e.run_id \
        WHERE e.status IN ('running', 'cancelling') AND (l.run_id IS NULL OR l.expires_at <= $1) \
        ORDER BY e.updated_at LIMIT $2",
    ),
    leases_expired: Statement::new(
        "SELECT run_id, worker_id, lease_id, expires_at FROM execution_leases \
        WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2",
    ),
    lease_clear_expired: Statement::new(
        "DELETE FROM execution_leases WHERE run_id = $1 AND lease_id = $2 AND expires_at <= $3",
    ),
    commands_resend_for_run: Statement::new(
        "INSERT INTO jadpo_command_dispatch (command_id, run_id, enqueued_at) \
        SELECT id, run_id, $2 FROM outbox_commands WHERE run_id = $1 AND status IN ('pending', 'claimed') \
        ON CONFLICT (command_id) DO UPDATE SET enqueued_at = excluded.enqueued_at \
        RETURNING command_id",
    ),
    command_get: Statement::new(
        "SELECT id, run_id, node_id, type, payload, status, idempotency_key \
        FROM outbox_commands WHERE id = $1",
    ),
    commands_claim_due: Statement::new(
        "INSERT INTO jadpo_command_dispatch (command_id, run_id, enqueued_at) \
        SELECT c.id, c.run_id, $1 FROM outbox_commands c \
        JOIN workflow_executions e ON e.run_id = c.run_id \
        LEFT JOIN jadpo_command_dispatch d ON d.command_id = c.id \
        WHERE c.status IN ('pending', 'claimed') AND e.status IN ('running', 'cancelling') \
        AND c.run_id NOT LIKE 'jadpo-verify-%' \
        AND (d.command_id IS NULL OR d.enqueued_at < $2) ORDER BY c.created_at LIMIT $3 \
        ON CONFLICT (command_id) DO UPDATE SET enqueued_at = excluded.enqueued_at \
        WHERE jadpo_command_dispatch.enqueued_at < $2 RETURNING command_id",
    ),
    // Advice to the relay, committed without waiting for the WAL flush, as the deliveries'
    // mark (`pipeline.rs`).
    command_mark_enqueued: Statement::new(
        "INSERT INTO jadpo_command_dispatch (command_id, run_id, enqueued_at) \
        SELECT $1::text, $2::text, $3::timestamptz FROM (SELECT set_config('synchronous_commit', 'off', true)) AS advisory \
        ON CONFLICT (command_id) DO UPDATE SET enqueued_at = excluded.enqueued_at",
    ),
    verify_revisions: Statement::new(
        "SELECT e.run_id, e.revision, m.last_seq FROM workflow_executions e \
        JOIN (SELECT run_id, max(seq) AS last_seq FROM workflow_events GROUP BY run_id) m \
        ON m.run_id = e.run_id WHERE e.revision <> m.last_seq \
        AND NOT EXISTS (SELECT 1 FROM workflow_events x WHERE x.run_id = e.run_id \
        AND x.id <> x.run_id || ':' || x.seq::text) ORDER BY e.run_id",
    ),
    verify_event_ids: Statement::new(
        "SELECT (SELECT count(*) FROM (SELECT run_id, seq FROM workflow_events \
        GROUP BY run_id, seq HAVING count(*) > 1) d) AS pairs, \
        (SELECT count(*) FROM (SELECT id FROM workflow_events GROUP BY id \
        HAVING count(*) > 1) i) AS ids",
    ),
    events_page_end: Statement::new(
        "SELECT run_id, seq FROM workflow_events WHERE (run_id, seq) > ($1::text, $2::integer) \
        ORDER BY run_id, seq LIMIT $3",
    ),
    events_upgrade_range: Statement::new(
        "UPDATE workflow_events SET payload = jsonb_build_object('seq', seq, 'type', type, \
        'payload', payload, 'timestamp', timestamp) \
        WHERE (run_id, seq) > ($1::text, $2::integer) AND (run_id, seq) <= ($3::text, $4::integer) \
        AND NOT (jsonb_typeof(payload) = 'object' AND payload ? 'payload' \
        AND payload -> 'seq' IS NOT DISTINCT FROM to_jsonb(seq) AND payload -> 'type' IS NOT DISTINCT FROM to_jsonb(type))",
    ),
    legacy_event_ids: Statement::new(
        "SELECT seq, id FROM workflow_events WHERE run_id = $1 AND id <> run_id || ':' || seq::text \
        ORDER BY seq",
    ),
    recovery_point: Statement::new(
        "SELECT e.run_id, e.seq, e.timestamp, \
        (SELECT count(*) FROM workflow_executions) AS runs, \
        (SELECT count(*) FROM workflow_events) AS events \
        FROM workflow_events e ORDER BY e.timestamp DESC, e.seq DESC LIMIT 1",
    ),
    executions_page: Statement::new(
        "SELECT run_id FROM workflow_executions WHERE run_id > $1 ORDER BY run_id LIMIT $2",
    ),
    runs_page_all: Statement::new(
        "SELECT run_id, workflow_id, workflow_version, status, current_node_id, revision, owner, created_at, updated_at FROM workflow_executions \
        WHERE ($1::text IS NULL OR workflow_id = $1) AND ($2::text IS NULL OR owner = $2) AND run_id < $3 \
        ORDER BY run_id DESC LIMIT $4",
    ),
    runs_page_status: Statement::new(
        "SELECT run_id, workflow_id, workflow_version, status, current_node_id, revision, owner, created_at, updated_at FROM workflow_executions \
        WHERE status = $1 AND ($2::text IS NULL OR workflow_id = $2) AND ($3::text IS NULL OR owner = $3) \
        AND run_id < $4 ORDER BY run_id DESC LIMIT $5",
    ),
    runs_count_status: Statement::new(
        "SELECT count(*) AS n FROM (SELECT 1 FROM workflow_executions WHERE status = $1 \
        ORDER BY status, run_id LIMIT $2) AS c",
    ),
    fingerprint: Statement::new(
        "SELECT (SELECT count(*) FROM workflow_executions) AS runs, \
        (SELECT CAST(coalesce(sum(revision), 0) AS BIGINT) FROM workflow_executions) AS run_revisions, \
        (SELECT count(*) FROM workflow_events) AS events, \
        (SELECT count(*) FROM outbox_commands WHERE status = 'pending') AS pending, \
        (SELECT count(*) FROM sessions) AS sessions, \
        (SELECT CAST(coalesce(sum(revision), 0) AS BIGINT) FROM sessions) AS session_revisions",
    ),
    sessions_all: Statement::new("SELECT id FROM sessions ORDER BY id"),
    session_delete: Statement::new("DELETE FROM sessions WHERE id = $1"),
    execution_delete: Statement::new("DELETE FROM workflow_executions WHERE run_id = $1"),
    run_counts: Statement::new(
        "SELECT (SELECT count(*) FROM workflow_events WHERE run_id = $1) AS events, \
        (SELECT count(*) FROM outbox_commands WHERE run_id = $1) AS commands",
    ),
    dispatch_delete_for_run: Statement::new("DELETE FROM jadpo_command_dispatch WHERE run_id = $1"),
    sessions_unbind_run: Statement::new(
        "UPDATE sessions SET active_run_id = NULL, revision = revision + 1, updated_at = $2 \
        WHERE active_run_id = $1",
    ),
    execution_adopt: Statement::new(
        "UPDATE workflow_executions SET owner = $2 WHERE run_id = $1 AND owner IS NULL",
    ),
    session_adopt: Statement::new(
        "UPDATE sessions SET owner = $2, revision = revision + 1, updated_at = $3 \
        WHERE id = $1 AND owner IS NULL",
    ),
    executions_finished: Statement::new(
        "SELECT run_id FROM workflow_executions WHERE workflow_id = $1 \
        AND status IN ('completed', 'failed', 'cancelled', 'cancellation_failed') AND updated_at < $2 \
        ORDER BY updated_at, run_id LIMIT $3",
    ),
    sessions_idle_of_workflow: Statement::new(
        "SELECT s.id FROM sessions s JOIN workflow_executions e ON e.run_id = s.active_run_id \
        WHERE e.workflow_id = $1 AND e.status IN ('completed', 'failed', 'cancelled', 'cancellation_failed') \
        AND s.updated_at < $2 ORDER BY s.updated_at, s.id LIMIT $3",
    ),
    sessions_idle_unbound: Statement::new(
        "SELECT id FROM sessions WHERE active_run_id IS NULL AND updated_at < $1 \
        ORDER BY updated_at, id LIMIT $2",
    ),
    commands_of_run: Statement::new(
        "SELECT id, seq, node_id, type, payload, status, idempotency_key, created_at, \
        processed_at FROM outbox_commands WHERE run_id = $1 ORDER BY seq",
    ),
    command_import: Statement::new(
        "INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, status, \
        idempotency_key, created_at, processed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    ),
    session_export: Statement::new(
        "SELECT id, user_id, context, active_run_id, revision, context_revision, \
        created_at, updated_at, owner FROM sessions WHERE id = $1",
    ),
    session_import: Statement::new(
        "INSERT INTO sessions (id, user_id, context, active_run_id, revision, \
        context_revision, created_at, updated_at, owner) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
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

fn execution_from_row(r: &Row) -> Result<ExecutionState, StoreError> {
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
