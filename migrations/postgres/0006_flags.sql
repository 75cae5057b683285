-- Jadpo system tables, PostgreSQL v6: feature flags and each change `jadpo flags` made.
-- Immutable once released: add a new version instead of editing this file.
CREATE TABLE jadpo_flags (
    name       TEXT PRIMARY KEY,
    mode       TEXT NOT NULL CHECK (mode IN ('off', 'on', 'percentage')),
    percentage INTEGER NOT NULL DEFAULT 0 CHECK (percentage BETWEEN 0 AND 100),
    updated_at TIMESTAMPTZ NOT NULL,
    updated_by TEXT NOT NULL
);

CREATE TABLE jadpo_flag_changes (
    id         TEXT PRIMARY KEY,
    flag       TEXT NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL,
    before     TEXT NOT NULL,
    after      TEXT NOT NULL,
    operator   TEXT NOT NULL,
    db_role    TEXT NOT NULL
);
CREATE INDEX jadpo_flag_changes_flag_idx ON jadpo_flag_changes (flag, changed_at);
