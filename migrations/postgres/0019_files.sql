-- Jadpo system tables, PostgreSQL v19: how many fields hold each stored file.
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per stored file: an upload writes it (refs 0) once the bytes are stored, and the
-- trigger on each declared file column adds one for each field that comes to hold the file and
-- takes one away for each that lets it go, in the transaction that changes the row. Housekeeping
-- notes when it first sees a file held by no field (unheld_since; a new reference clears it),
-- and after the grace period claims it (state 'deleting'), deletes its bytes and keeps the row
-- as a tombstone (state 'deleted') so that a stale reference is refused rather than left naming
-- nothing. Tombstones are removed after their own period.
CREATE TABLE jadpo_files (
    file_id      TEXT PRIMARY KEY,
    refs         BIGINT NOT NULL DEFAULT 0 CHECK (refs >= 0),
    state        TEXT NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'deleting', 'deleted')),
    unheld_since TIMESTAMPTZ,
    updated_at   TIMESTAMPTZ
);
CREATE INDEX jadpo_files_unheld_idx ON jadpo_files (state, unheld_since) WHERE refs = 0;

-- Fired AFTER each row change of a table with a declared file column (TG_ARGV[0]: the column,
-- JSONB holding the file's object, or NULL). An update that keeps the same file changes nothing;
-- otherwise the new file gains one (refused if its bytes are being or were deleted) before the
-- old one loses one.
CREATE FUNCTION jadpo_files_count() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
    old_id text;
    new_id text;
    held   bigint;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        old_id := to_jsonb(OLD) -> TG_ARGV[0] ->> 'id';
    END IF;
    IF TG_OP <> 'DELETE' THEN
        new_id := to_jsonb(NEW) -> TG_ARGV[0] ->> 'id';
    END IF;
    IF old_id IS NOT DISTINCT FROM new_id THEN
        RETURN NULL;
    END IF;
    IF new_id IS NOT NULL THEN
        INSERT INTO jadpo_files AS f (file_id, refs, state) VALUES (new_id, 1, 'live')
        ON CONFLICT (file_id) DO UPDATE SET refs = f.refs + 1, unheld_since = NULL
         WHERE f.state = 'live';
        GET DIAGNOSTICS held = ROW_COUNT;
        IF held = 0 THEN
            RAISE EXCEPTION 'file % was deleted (no record held it for the grace period): upload it again', new_id
                USING ERRCODE = 'P0001';
        END IF;
    END IF;
    IF old_id IS NOT NULL THEN
        UPDATE jadpo_files SET refs = refs - 1 WHERE file_id = old_id AND refs > 0;
    END IF;
    RETURN NULL;
END
$body$;
