-- Jadpo system tables, SQLite v7: the audit trail (times in Unix epoch milliseconds).
-- Immutable once released: add a new version instead of editing this file.
--
-- Each change to an audited record, by the entity's born name, the record's id and its place
-- among the record's changes. Rows are only ever added; housekeeping deletes them when the
-- entity's retention ends, and erasure deletes them with their record. The triggers that write
-- it are generated per audited table from the application's declaration (values as text,
-- encoding 2: SQLite's text form of each value).
CREATE TABLE jadpo_audit (
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
    encoding   INTEGER NOT NULL,
    PRIMARY KEY (entity, record_id, seq)
);
CREATE INDEX jadpo_audit_changed_at_idx ON jadpo_audit (entity, changed_at);

-- SQLite has no transaction-local settings: the runtime writes who, through which action,
-- request and trace, and the time, here when it opens a transaction on an audited store, and
-- deletes the row before committing. SQLite's single writer means the row, while present,
-- belongs to the transaction writing. A change made outside the runtime finds no row and is
-- recorded as such.
CREATE TABLE jadpo_audit_context (
    id         INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    actor      TEXT NOT NULL,
    action     TEXT,
    request_id TEXT,
    trace      TEXT,
    now        INTEGER NOT NULL
);
