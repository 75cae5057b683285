-- Workflow store, SQLite v2: the Session's nullable pointer to its most recently bound run.
-- No foreign key on purpose: Session and execution retention are managed independently.
ALTER TABLE sessions ADD COLUMN active_run_id TEXT;
