-- Jadpo system tables, SQLite v23: who uploaded each file and what they uploaded; a column for
-- the database role beside each audit row's actor (operator actions record it since v4).
-- Immutable once released: add a new version instead of editing this file.
--
-- A file's row now keeps its uploader (the principal, as `user:ID` or `service:NAME`) and the
-- name, content type, size and SHA-256 registered with its bytes, so an action can refuse a file
-- another principal uploaded or one whose metadata a request altered, and uploads can be counted
-- against a quota per uploader. Rows written before this version have none of them (NULL), and
-- an action's check refuses them as uploaded by no one it knows.
--
-- SQLite has no roles: `db_role` stays NULL here (PostgreSQL records `session_user`), and the
-- column exists so that both dialects read the same rows.
ALTER TABLE jadpo_files ADD COLUMN uploader TEXT;
ALTER TABLE jadpo_files ADD COLUMN name TEXT;
ALTER TABLE jadpo_files ADD COLUMN content_type TEXT;
ALTER TABLE jadpo_files ADD COLUMN size INTEGER CHECK (size >= 0);
ALTER TABLE jadpo_files ADD COLUMN sha256 TEXT;
CREATE INDEX jadpo_files_uploader_idx ON jadpo_files (uploader) WHERE state = 'live';

ALTER TABLE jadpo_audit ADD COLUMN db_role TEXT;
