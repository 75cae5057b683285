-- Workflow store, SQLite v1: the five core tables and their indexes. The UNIQUE (run_id, seq)
-- constraint's index is the event (run_id, seq) index.
-- Immutable once released: add a new version instead of editing this file.
CREATE TABLE workflow_executions (
    run_id           TEXT PRIMARY KEY,
    workflow_id      TEXT NOT NULL,
    workflow_version TEXT NOT NULL,
    status           TEXT NOT NULL,
    current_node_id  TEXT,
    revision         INTEGER NOT NULL DEFAULT 0,
    state_json       TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

CREATE TABLE workflow_events (
    id        TEXT PRIMARY KEY,
    run_id    TEXT NOT NULL REFERENCES workflow_executions (run_id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    type      TEXT NOT NULL,
    payload   TEXT NOT NULL,
    timestamp INTEGER NOT NULL,
    UNIQUE (run_id, seq)
);

CREATE TABLE outbox_commands (
    id              TEXT PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES workflow_executions (run_id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    node_id         TEXT NOT NULL,
    type            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    idempotency_key TEXT,
    created_at      INTEGER NOT NULL,
    processed_at    INTEGER
);

CREATE TABLE execution_leases (
    run_id     TEXT PRIMARY KEY REFERENCES workflow_executions (run_id) ON DELETE CASCADE,
    worker_id  TEXT NOT NULL,
    lease_id   TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    context    TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE INDEX idx_sessions_user_id ON sessions (user_id);
CREATE INDEX idx_workflow_executions_status ON workflow_executions (status);
CREATE INDEX idx_outbox_commands_status ON outbox_commands (status);
CREATE INDEX idx_execution_leases_expires_at ON execution_leases (expires_at);
