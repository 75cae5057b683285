-- Jadpo system tables, SQLite v26: keyed state, the primitive the built-in services share
-- (times in Unix epoch milliseconds).
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per piece of a service's state, by its kind (the service: a poll's cursor, a grant's
-- refresh, a debounce) and its name within that kind: the value as last written (JSON text, in
-- the form `encoding` names; NULL until the first write), its version (how many writes it has
-- had: a write names the version it read, and is refused if another write came first), and its
-- lease (owner, expiry and a generation the database increments on every acquisition). A write
-- commits only while its writer still holds the lease it claimed, at the generation it was
-- given, and only at the version it read: one statement checks all three, inside the
-- transaction that also writes the events the new state emits, so that state and outbox commit
-- or roll back together. Nothing is held across a call to the outside world: claim, call, then
-- commit with the check.
CREATE TABLE jadpo_keyed_state (
    kind              TEXT NOT NULL,
    name              TEXT NOT NULL,
    value             TEXT,
    encoding          INTEGER,
    version           INTEGER NOT NULL DEFAULT 0,
    lease_owner       TEXT,
    lease_expires_at  INTEGER,
    lease_generation  INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
);
