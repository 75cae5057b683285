-- Jadpo system tables, PostgreSQL v16: an audit trail the runtime's own role cannot rewrite.
-- Immutable once released: add a new version instead of editing this file.
--
-- With separate roles (`jadpo roles grant`, docs/security.md) the functions' role may read and
-- add to jadpo_audit but never update or delete a row. So the trigger function runs as its owner
-- (the migration owner), retention deletes only through jadpo_audit_expire, and both trust the
-- caller's clock and cutoff only in a session of the owner (migrations, tests, an operator who
-- owns the schema): any other role's change is stamped with the database's time, and its
-- retention is the entity's own, installed with its trigger.

-- Whether this session's role is (a member of) the owner of the audit functions.
CREATE FUNCTION jadpo_audit_trusted() RETURNS boolean LANGUAGE sql STABLE AS $fn$
    SELECT pg_has_role(session_user, p.proowner, 'MEMBER')
      FROM pg_proc p WHERE p.oid = 'jadpo_audit_row()'::regprocedure
$fn$;

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
            changed::text, 1);
    RETURN NULL;
END
$body$;

-- Deletes up to p_limit of p_entity's audit rows changed before p_cutoff, returning each one's
-- seq. For a role other than the owner the cutoff is at most the database's now minus the
-- entity's retention (jadpo_audit_retention_<entity>(), installed with its trigger); an entity
-- with none installed keeps every row.
CREATE FUNCTION jadpo_audit_expire(p_entity text, p_cutoff timestamptz, p_limit bigint)
RETURNS TABLE (seq bigint) LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
#variable_conflict use_column
DECLARE
    cutoff timestamptz := p_cutoff;
    kept   interval;
BEGIN
    IF NOT jadpo_audit_trusted() THEN
        IF p_entity !~ '^[a-z_][a-z0-9_]*$' THEN
            RETURN;
        END IF;
        BEGIN
            EXECUTE format('SELECT %I()', 'jadpo_audit_retention_' || p_entity) INTO kept;
        EXCEPTION WHEN undefined_function THEN
            kept := NULL;
        END;
        IF kept IS NULL THEN
            RETURN;
        END IF;
        cutoff := LEAST(p_cutoff, now() - kept);
    END IF;
    RETURN QUERY
    DELETE FROM jadpo_audit a
     WHERE (a.entity, a.record_id, a.seq) IN (
           SELECT b.entity, b.record_id, b.seq FROM jadpo_audit b
            WHERE b.entity = p_entity AND b.changed_at < cutoff
            LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING a.seq;
END
$fn$;
