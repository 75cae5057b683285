-- Jadpo system tables, PostgreSQL v18: one numbering for the forms of kept values.
-- Immutable once released: add a new version instead of editing this file.
--
-- An `encoding` number now means the same form in every table and on every database:
-- 1 json_text (the outbox's payload), 2 webauthn_rp_bin (passkeys), 3 audit_text (the audit
-- trail's changes), 4 sealed_json (a step's sealed answer). NULL is a row written before
-- encodings were recorded, read as the one form its table then kept. Each statement runs only
-- in the stores that hold its table.

-- Passkeys and ceremonies were numbered 1 for their binary form: 2 now.
UPDATE jadpo_passkeys SET encoding = 2 WHERE encoding = 1;
UPDATE jadpo_passkey_challenges SET encoding = 2 WHERE encoding = 1;

-- The audit trail's changes were numbered 1 here (2 on SQLite) for the same form: 3 now, and
-- the column takes NULL like every other encoding, with no default.
ALTER TABLE jadpo_audit ALTER COLUMN encoding DROP NOT NULL;
UPDATE jadpo_audit SET encoding = 3 WHERE encoding = 1;

-- The trigger function of v16, writing 3.
CREATE OR REPLACE FUNCTION jadpo_audit_row() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $body$
DECLARE
    old_row  jsonb := CASE WHEN TG_OP = 'INSERT' THEN '{}'::jsonb ELSE to_jsonb(OLD) END;
    new_row  jsonb := CASE WHEN TG_OP = 'DELETE' THEN '{}'::jsonb ELSE to_jsonb(NEW) END;
    rec_id   text := COALESCE(new_row ->> 'id', old_row ->> 'id');
    columns  text[] := string_to_array(TG_ARGV[1], ',');
    changed  jsonb;
    next_seq bigint;
    at       timestamptz := now();
BEGIN
    SELECT COALESCE(jsonb_object_agg(k, jsonb_build_object('before', old_row ->> k, 'after', new_row ->> k)), '{}'::jsonb)
      INTO changed
      FROM unnest(columns) AS k
     WHERE (old_row -> k) IS DISTINCT FROM (new_row -> k);
    IF TG_OP = 'UPDATE' AND changed = '{}'::jsonb THEN
        RETURN NULL;
    END IF;
    IF jadpo_audit_trusted() THEN
        at := COALESCE(NULLIF(current_setting('jadpo.now', true), '')::timestamptz, now());
    END IF;
    SELECT COALESCE(MAX(seq), 0) + 1 INTO next_seq
      FROM jadpo_audit WHERE entity = TG_ARGV[0] AND record_id = rec_id;
    INSERT INTO jadpo_audit (entity, record_id, seq, changed_at, kind, actor, action, request_id,
                             trace, changes, encoding)
    VALUES (TG_ARGV[0], rec_id, next_seq, at, lower(TG_OP),
            COALESCE(NULLIF(current_setting('jadpo.actor', true), ''),
                     'outside the runtime (role ' || session_user || ')'),
            NULLIF(current_setting('jadpo.action', true), ''),
            NULLIF(current_setting('jadpo.request', true), ''),
            NULLIF(current_setting('jadpo.trace', true), ''),
            changed::text, 3);
    RETURN NULL;
END
$body$;

-- A step's sealed answer records its form; steps answered before have none (read as the
-- one form answers were ever sealed in).
ALTER TABLE jadpo_steps ADD COLUMN encoding SMALLINT;
