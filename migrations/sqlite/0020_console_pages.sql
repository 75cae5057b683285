-- Jadpo system tables, v20: the operator console's pages, read by keyset. Deliveries newest
-- first among all, and among those of one status (the dead ones); runs of one status newest
-- first (run ids are time-ordered, so the primary key already serves all runs). Each page starts
-- where the last ended: no page sorts or skips rows, however many there are.
-- Immutable once released: add a new version instead of editing this file.
CREATE INDEX jadpo_deliveries_created_idx ON jadpo_deliveries (created_at, id);
CREATE INDEX jadpo_deliveries_status_created_idx ON jadpo_deliveries (status, created_at, id);
CREATE INDEX jadpo_executions_status_run_idx ON workflow_executions (status, run_id);
