-- Workflow store, PostgreSQL v3: the Session's nullable pointer to its most recently bound run.
-- No foreign key on purpose: Session and execution retention are managed independently.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS active_run_id VARCHAR(255);
