-- Jadpo system tables, PostgreSQL v23: who uploaded each file and what they uploaded; the
-- database role of the session beside each audit row's actor (operator actions record it since v4).
-- Immutable once released: add a new version instead of editing this file.
--
-- A file's row now keeps its uploader (the principal, as `user:ID` or `service:NAME`) and the
-- name, content type, size and SHA-256 registered with its bytes, so an action can refuse a file
-- another principal uploaded or one whose metadata a request altered, and uploads can be counted
-- against a quota per uploader. Rows written before this version have none of them (NULL), and
-- an action's check refuses them as uploaded by no one it knows.
--
-- `actor` is what the runtime says (`jadpo.actor`); `db_role` is `session_user`, the role that
-- logged in, which the database sets and no statement of that session can change (only a
-- superuser's SET SESSION AUTHORIZATION can). A column default is evaluated by the statement
-- that inserts, here the audit trigger, which runs as its owner but leaves session_user as it is.
ALTER TABLE jadpo_files
    ADD COLUMN uploader     TEXT,
    ADD COLUMN name         TEXT,
    ADD COLUMN content_type TEXT,
    ADD COLUMN size         BIGINT CHECK (size >= 0),
    ADD COLUMN sha256       TEXT;
CREATE INDEX jadpo_files_uploader_idx ON jadpo_files (uploader) WHERE state = 'live';

ALTER TABLE jadpo_audit ADD COLUMN db_role TEXT DEFAULT session_user;
