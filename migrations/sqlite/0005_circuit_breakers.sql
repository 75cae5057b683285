-- Jadpo system tables, SQLite v5 (times in Unix epoch milliseconds): each connection's circuit breaker over the deliveries
-- beside it. Immutable once released: add a new version instead of editing this file.
CREATE TABLE jadpo_circuit_breakers (
    connection       TEXT PRIMARY KEY NOT NULL,
    state            TEXT NOT NULL DEFAULT 'closed'
                     CHECK (state IN ('closed', 'open', 'half_open')),
    failures         INTEGER NOT NULL DEFAULT 0,
    opened_at        INTEGER,
    pause_ms         INTEGER NOT NULL DEFAULT 0,
    reopen_at        INTEGER,
    probe_delivery   TEXT,
    probe_started_at INTEGER,
    alert_at         INTEGER,
    alert_raised_at  INTEGER,
    updated_at       INTEGER NOT NULL
);

-- Held deliveries are found by their connection when a breaker closes.
CREATE INDEX jadpo_deliveries_held_idx ON jadpo_deliveries (held_connection)
    WHERE held_connection IS NOT NULL;
