-- Workflow store, PostgreSQL v1: the five core tables and their indexes.
-- Idempotent DDL, so that pre-ledger databases are adopted safely, plus the additive
-- cancellation_state column those databases may lack. The UNIQUE (run_id, seq) constraint's
-- index is the event (run_id, seq) index.
-- Immutable once released: add a new version instead of editing this file.
CREATE TABLE IF NOT EXISTS workflow_executions (
    run_id           VARCHAR(255) PRIMARY KEY,
    workflow_id      VARCHAR(255) NOT NULL,
    workflow_version VARCHAR(50)  NOT NULL,
    status           VARCHAR(50)  NOT NULL,
    current_node_id  VARCHAR(255),
    revision         INTEGER      NOT NULL DEFAULT 0,
    input            JSONB        NOT NULL,
    data             JSONB        NOT NULL,
    error            JSONB,
    created_at       TIMESTAMPTZ  NOT NULL,
    updated_at       TIMESTAMPTZ  NOT NULL
);

ALTER TABLE workflow_executions ADD COLUMN IF NOT EXISTS cancellation_state JSONB;

CREATE TABLE IF NOT EXISTS workflow_events (
    id        VARCHAR(255) PRIMARY KEY,
    run_id    VARCHAR(255) NOT NULL REFERENCES workflow_executions (run_id) ON DELETE CASCADE,
    seq       INTEGER      NOT NULL,
    type      VARCHAR(100) NOT NULL,
    payload   JSONB        NOT NULL,
    timestamp BIGINT       NOT NULL,
    CONSTRAINT workflow_events_run_id_seq_key UNIQUE (run_id, seq)
);

CREATE TABLE IF NOT EXISTS outbox_commands (
    id              VARCHAR(255) PRIMARY KEY,
    run_id          VARCHAR(255) NOT NULL REFERENCES workflow_executions (run_id) ON DELETE CASCADE,
    seq             INTEGER      NOT NULL,
    node_id         VARCHAR(255) NOT NULL,
    type            VARCHAR(100) NOT NULL,
    payload         JSONB        NOT NULL,
    status          VARCHAR(50)  NOT NULL DEFAULT 'pending',
    idempotency_key VARCHAR(255),
    created_at      TIMESTAMPTZ  NOT NULL,
    processed_at    TIMESTAMPTZ
);

CREATE TABLE IF NOT EXISTS execution_leases (
    run_id     VARCHAR(255) PRIMARY KEY REFERENCES workflow_executions (run_id) ON DELETE CASCADE,
    worker_id  VARCHAR(255) NOT NULL,
    lease_id   VARCHAR(255) NOT NULL,
    expires_at BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id         VARCHAR(255) PRIMARY KEY,
    user_id    VARCHAR(255) NOT NULL,
    context    JSONB        NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ  NOT NULL,
    updated_at TIMESTAMPTZ  NOT NULL
);

CREATE INDEX IF NOT EXISTS idx_sessions_user_id ON sessions (user_id);
CREATE INDEX IF NOT EXISTS idx_workflow_executions_status ON workflow_executions (status);
CREATE INDEX IF NOT EXISTS idx_outbox_commands_status ON outbox_commands (status);
CREATE INDEX IF NOT EXISTS idx_execution_leases_expires_at ON execution_leases (expires_at);
