-- Jadpo system tables, PostgreSQL v1: the event pipeline.
-- Immutable once released: add a new version instead of editing this file.

-- Each event an action emitted, committed with the action's writes.
CREATE TABLE jadpo_outbox (
    id          TEXT PRIMARY KEY,
    event_type  TEXT NOT NULL,
    payload     TEXT NOT NULL,
    encoding    SMALLINT,
    traceparent TEXT,
    tracestate  TEXT,
    chain_depth INTEGER NOT NULL CHECK (chain_depth >= 0),
    source      TEXT NOT NULL,
    request_id  TEXT,
    created_at  TIMESTAMPTZ NOT NULL
);

-- Each event's delivery to each subscriber.
CREATE TABLE jadpo_deliveries (
    id              TEXT PRIMARY KEY,
    outbox_id       TEXT NOT NULL REFERENCES jadpo_outbox (id) ON DELETE CASCADE,
    subscriber      TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'handled', 'dead', 'discarded')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    enqueued_at     TIMESTAMPTZ,
    last_attempt_at TIMESTAMPTZ,
    last_failure    TEXT,
    held_connection TEXT,
    held_at         TIMESTAMPTZ,
    finished_at     TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    CONSTRAINT jadpo_deliveries_outbox_subscriber_key UNIQUE (outbox_id, subscriber)
);
CREATE INDEX jadpo_deliveries_due_idx ON jadpo_deliveries (status, next_attempt_at);

-- Each delivery a subscriber handled, in the store the subscriber writes; no foreign key, since
-- the delivery may live in another store.
CREATE TABLE jadpo_handled_deliveries (
    delivery_id TEXT PRIMARY KEY,
    subscriber  TEXT NOT NULL,
    handled_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX jadpo_handled_deliveries_handled_at_idx ON jadpo_handled_deliveries (handled_at);

-- Each idempotent request's key, digest and stored response.
CREATE TABLE jadpo_idempotency_keys (
    scope           TEXT NOT NULL,
    key             TEXT NOT NULL,
    request_digest  TEXT NOT NULL,
    response_status INTEGER NOT NULL,
    response_body   TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX jadpo_idempotency_keys_expires_at_idx ON jadpo_idempotency_keys (expires_at);

-- Each service key: its service and verifier (SHA-256 of the key; the key itself is never kept).
CREATE TABLE jadpo_service_keys (
    id         TEXT PRIMARY KEY,
    service    TEXT NOT NULL,
    verifier   TEXT NOT NULL UNIQUE,
    issued_at  TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
