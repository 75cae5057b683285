-- Jadpo system tables, SQLite v3: the housekeeping pass's lease and its last completed pass.
-- The lease columns follow the lease primitive shared by every leased row: an owner, an expiry
-- and a generation the database increments on every acquisition, which fences stale holders.
CREATE TABLE jadpo_housekeeping (
    name              TEXT PRIMARY KEY NOT NULL,
    lease_owner       TEXT,
    lease_expires_at  INTEGER,
    lease_generation  INTEGER NOT NULL DEFAULT 0,
    last_completed_at INTEGER
);
