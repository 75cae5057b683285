-- Workflow store, PostgreSQL v2: per-node iteration counters for bounded repeat nodes.
ALTER TABLE workflow_executions ADD COLUMN IF NOT EXISTS loop_state JSONB;
