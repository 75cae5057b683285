//! The workflow tables' statements in SQLite's: the whole state in `state_json`; the single writer needs no row locks.

use jadpo_core::workflow::{WorkflowDialect, WorkflowSql};

use crate::SqliteStore;

/// The workflow statements.
pub static SQL: WorkflowSql = WorkflowSql {
    execution_lock: "SELECT revision FROM workflow_executions WHERE run_id = $1",
    execution_insert: "INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, \
        current_node_id, revision, state_json, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    execution_update: "UPDATE workflow_executions SET workflow_id = $2, workflow_version = $3, status = $4, \
        current_node_id = $5, revision = $6, state_json = $7, created_at = $8, updated_at = $9 \
        WHERE run_id = $1",
    execution_get: "SELECT state_json FROM workflow_executions WHERE run_id = $1",
    event_insert: "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) \
        VALUES ($1, $2, $3, $4, $5, $6)",
    events_list: "SELECT seq, type, payload, timestamp FROM workflow_events WHERE run_id = $1 \
        ORDER BY seq",
    command_insert: "INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, \
        idempotency_key, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    command_ack: "UPDATE outbox_commands SET status = $2, processed_at = $3 \
        WHERE id = $1 AND status = 'pending'",
    session_lock: "SELECT user_id, revision FROM sessions WHERE id = $1",
    session_bind: "UPDATE sessions SET active_run_id = $2, updated_at = $3, revision = revision + 1 \
        WHERE id = $1 AND revision = $4",
    session_insert: "INSERT INTO sessions (id, user_id, context, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $4)",
    session_get: "SELECT id, user_id, context, active_run_id, revision, context_revision \
        FROM sessions WHERE id = $1",
};

impl WorkflowDialect for SqliteStore {
    fn workflow_sql(&self) -> &'static WorkflowSql {
        &SQL
    }
}
