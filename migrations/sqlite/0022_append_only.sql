-- Jadpo system tables, SQLite v22: the audit trail and a workflow's event log are append-only in
-- the database.
-- Immutable once released: add a new version instead of editing this file.
--
-- SQLite has no roles, so triggers keep what PostgreSQL's roles keep. An audit row is never
-- changed, and leaves only by retention or erasure: the runtime writes the one row of
-- jadpo_audit_release just before such a delete and removes it just after, in the same
-- transaction (SQLite's single writer means the row, while present, belongs to that
-- transaction). A workflow event leaves only with its run (retention deletes the run; its events
-- go by the cascade), and the one rewrite allowed is the upgrade that puts an earlier release's
-- inner payload inside its envelope (seq, type, payload, timestamp), every other column
-- unchanged. Any other UPDATE or DELETE is refused.
CREATE TABLE jadpo_audit_release (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1)
);

CREATE TRIGGER jadpo_audit_no_update BEFORE UPDATE ON jadpo_audit
BEGIN
    SELECT RAISE(ABORT, 'jadpo_audit is append-only: its rows are never changed');
END;

CREATE TRIGGER jadpo_audit_no_delete BEFORE DELETE ON jadpo_audit
WHEN NOT EXISTS (SELECT 1 FROM jadpo_audit_release)
BEGIN
    SELECT RAISE(ABORT, 'jadpo_audit is append-only: rows leave only by retention or erasure');
END;

CREATE TRIGGER workflow_events_no_rewrite BEFORE UPDATE ON workflow_events
WHEN NEW.id IS NOT OLD.id OR NEW.run_id IS NOT OLD.run_id OR NEW.seq IS NOT OLD.seq
  OR NEW.type IS NOT OLD.type OR NEW.timestamp IS NOT OLD.timestamp
  OR NEW.actor IS NOT OLD.actor
  OR NEW.payload IS NOT json_object('seq', OLD.seq, 'type', OLD.type,
                                    'payload', json(OLD.payload), 'timestamp', OLD.timestamp)
BEGIN
    SELECT RAISE(ABORT, 'workflow_events is append-only: an event cannot be rewritten');
END;

CREATE TRIGGER workflow_events_no_delete BEFORE DELETE ON workflow_events
WHEN EXISTS (SELECT 1 FROM workflow_executions WHERE run_id = OLD.run_id)
BEGIN
    SELECT RAISE(ABORT, 'workflow_events is append-only: an event leaves only with its run');
END;
