-- Jadpo system tables, PostgreSQL v7: the audit trail, and the trigger function that writes it.
-- Immutable once released: add a new version instead of editing this file.
--
-- Each change to an audited record, by the entity's born name, the record's id and its place
-- among the record's changes. Rows are only ever added; housekeeping deletes them when the
-- entity's retention ends, and erasure deletes them with their record.
CREATE TABLE jadpo_audit (
    entity     TEXT NOT NULL,
    record_id  TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('insert', 'update', 'delete')),
    actor      TEXT NOT NULL,
    action     TEXT,
    request_id TEXT,
    trace      TEXT,
    changes    TEXT NOT NULL,
    encoding   SMALLINT NOT NULL,
    PRIMARY KEY (entity, record_id, seq)
);
CREATE INDEX jadpo_audit_changed_at_idx ON jadpo_audit (entity, changed_at);

-- Fired AFTER each row change of an audited table (TG_ARGV[0]: the entity's born name,
-- TG_ARGV[1]: its audited columns, comma-separated). Who, through which action, request and
-- trace come from transaction-local settings the runtime sets when it opens the transaction
-- (`set_config(..., true)`), so SQL an action runs itself is recorded too; a change made outside
-- the runtime is recorded with the database role. Values are recorded as text (encoding 1:
-- PostgreSQL's JSON text form of each value).
CREATE FUNCTION jadpo_audit_row() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    old_row  jsonb := CASE WHEN TG_OP = 'INSERT' THEN '{}'::jsonb ELSE to_jsonb(OLD) END;
    new_row  jsonb := CASE WHEN TG_OP = 'DELETE' THEN '{}'::jsonb ELSE to_jsonb(NEW) END;
    rec_id   text := COALESCE(new_row ->> 'id', old_row ->> 'id');
    columns  text[] := string_to_array(TG_ARGV[1], ',');
    changed  jsonb;
    next_seq bigint;
BEGIN
    SELECT COALESCE(jsonb_object_agg(k, jsonb_build_object('before', old_row ->> k, 'after', new_row ->> k)), '{}'::jsonb)
      INTO changed
      FROM unnest(columns) AS k
     WHERE (old_row -> k) IS DISTINCT FROM (new_row -> k);
    IF TG_OP = 'UPDATE' AND changed = '{}'::jsonb THEN
        RETURN NULL;
    END IF;
    SELECT COALESCE(MAX(seq), 0) + 1 INTO next_seq
      FROM jadpo_audit WHERE entity = TG_ARGV[0] AND record_id = rec_id;
    INSERT INTO jadpo_audit (entity, record_id, seq, changed_at, kind, actor, action, request_id,
                             trace, changes, encoding)
    VALUES (TG_ARGV[0], rec_id, next_seq,
            COALESCE(NULLIF(current_setting('jadpo.now', true), '')::timestamptz, now()),
            lower(TG_OP),
            COALESCE(NULLIF(current_setting('jadpo.actor', true), ''),
                     'outside the runtime (role ' || current_user || ')'),
            NULLIF(current_setting('jadpo.action', true), ''),
            NULLIF(current_setting('jadpo.request', true), ''),
            NULLIF(current_setting('jadpo.trace', true), ''),
            changed::text, 1);
    RETURN NULL;
END
$body$;
