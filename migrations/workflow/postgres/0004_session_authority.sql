-- Workflow store, PostgreSQL v4: Session CAS counters; legacy rows start at 0 and acquire their
-- first authoritative revision on the next successful CAS write.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS context_revision BIGINT NOT NULL DEFAULT 0;
