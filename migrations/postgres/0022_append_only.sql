-- Jadpo system tables, PostgreSQL v22: a workflow's event log is append-only in the database.
-- Immutable once released: add a new version instead of editing this file.
--
-- Events leave only with their run (retention deletes the run; its events go by the cascade),
-- and the one rewrite allowed is the upgrade that puts an earlier release's inner payload inside
-- its envelope (seq, type, payload, timestamp), every other column unchanged. Any other UPDATE
-- or DELETE, by any role, is refused. An audit row is never changed, by any role, either; who may
-- delete one is kept by roles (`jadpo roles grant`: the runtime may not, retention deletes
-- through jadpo_audit_expire). The functions resolve names in their own schema, temporary
-- objects last.
SELECT set_config('search_path', quote_ident(current_schema()) || ', pg_temp', true);

CREATE FUNCTION workflow_events_append_only() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $body$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM workflow_executions WHERE run_id = OLD.run_id) THEN
            RAISE EXCEPTION 'workflow_events is append-only: event % leaves only with its run', OLD.id
                USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF to_jsonb(NEW) - 'payload' IS DISTINCT FROM to_jsonb(OLD) - 'payload'
       OR NEW.payload IS DISTINCT FROM jsonb_build_object('seq', OLD.seq, 'type', OLD.type,
                                                         'payload', OLD.payload,
                                                         'timestamp', OLD.timestamp) THEN
        RAISE EXCEPTION 'workflow_events is append-only: event % cannot be rewritten', OLD.id
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$body$;

CREATE TRIGGER workflow_events_append_only BEFORE UPDATE OR DELETE ON workflow_events
    FOR EACH ROW EXECUTE FUNCTION workflow_events_append_only();

CREATE FUNCTION jadpo_audit_no_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $body$
BEGIN
    RAISE EXCEPTION 'jadpo_audit is append-only: its rows are never changed'
        USING ERRCODE = 'restrict_violation';
END
$body$;

CREATE TRIGGER jadpo_audit_no_update BEFORE UPDATE ON jadpo_audit
    FOR EACH ROW EXECUTE FUNCTION jadpo_audit_no_update();
