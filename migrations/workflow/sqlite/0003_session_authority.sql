-- Workflow store, SQLite v3: Session CAS counters; legacy rows start at 0.
ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN context_revision INTEGER NOT NULL DEFAULT 0;
