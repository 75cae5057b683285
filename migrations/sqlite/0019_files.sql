-- Jadpo system tables, SQLite v19: how many fields hold each stored file (times in Unix epoch
-- milliseconds).
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per stored file: an upload writes it (refs 0) once the bytes are stored, and the
-- triggers on each declared file column (generated from the declaration: SQLite triggers must
-- name their columns) add one for each field that comes to hold the file and take one away for
-- each that lets it go, in the transaction that changes the row. Housekeeping notes when it
-- first sees a file held by no field (unheld_since; a new reference clears it), and after the
-- grace period claims it (state 'deleting'), deletes its bytes and keeps the row as a tombstone
-- (state 'deleted') so that a stale reference is refused rather than left naming nothing.
-- Tombstones are removed after their own period.
CREATE TABLE jadpo_files (
    file_id      TEXT PRIMARY KEY NOT NULL,
    refs         INTEGER NOT NULL DEFAULT 0 CHECK (refs >= 0),
    state        TEXT NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'deleting', 'deleted')),
    unheld_since INTEGER,
    updated_at   INTEGER
);
CREATE INDEX jadpo_files_unheld_idx ON jadpo_files (state, unheld_since) WHERE refs = 0;
