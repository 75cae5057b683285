-- Jadpo system tables, SQLite v18: one numbering for the forms of kept values (times in Unix
-- epoch milliseconds).
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

-- The audit trail's changes were numbered 2 here (1 on PostgreSQL) for the same form: 3 now,
-- and the column takes NULL like every other encoding, with no default. SQLite drops a NOT NULL
-- only by making the table again. The audit triggers on the application's tables name
-- jadpo_audit; with the legacy rename, SQLite neither rewrites nor checks them while the table is
-- away, and they write to the new table once it has the name (and are made again, writing 3, by
-- the same apply).
PRAGMA legacy_alter_table = ON;
CREATE TABLE jadpo_audit_next (
    entity     TEXT NOT NULL,
    record_id  TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    changed_at INTEGER NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('insert', 'update', 'delete')),
    actor      TEXT NOT NULL,
    action     TEXT,
    request_id TEXT,
    trace      TEXT,
    changes    TEXT NOT NULL,
    encoding   INTEGER,
    PRIMARY KEY (entity, record_id, seq)
);
INSERT INTO jadpo_audit_next (entity, record_id, seq, changed_at, kind, actor, action,
    request_id, trace, changes, encoding)
    SELECT entity, record_id, seq, changed_at, kind, actor, action, request_id, trace, changes,
           CASE WHEN encoding = 2 THEN 3 ELSE encoding END
      FROM jadpo_audit;
DROP TABLE jadpo_audit;
ALTER TABLE jadpo_audit_next RENAME TO jadpo_audit;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX jadpo_audit_changed_at_idx ON jadpo_audit (entity, changed_at);

-- A step's sealed answer records its form; steps answered before have none (read as the
-- one form answers were ever sealed in).
ALTER TABLE jadpo_steps ADD COLUMN encoding INTEGER;
