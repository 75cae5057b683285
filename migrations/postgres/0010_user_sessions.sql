-- Jadpo system tables, PostgreSQL v10: users' sessions — API tokens today, browser sessions next.
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per session: its user, the verifier of its token (the SHA-256 of the whole token; the
-- token itself is shown once), for a browser session the verifier of its CSRF token, when it
-- started and was last seen, its idle limit (none for an API token) and absolute end, and when it
-- was ended (sign-out, "sign out everywhere"). An ended or expired session authenticates nobody;
-- housekeeping deletes it.
CREATE TABLE jadpo_sessions (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL,
    kind           TEXT NOT NULL,
    token_verifier TEXT NOT NULL UNIQUE,
    csrf_verifier  TEXT,
    started_at     TIMESTAMPTZ NOT NULL,
    last_seen_at   TIMESTAMPTZ NOT NULL,
    idle_limit_s   BIGINT,
    expires_at     TIMESTAMPTZ NOT NULL,
    ended_at       TIMESTAMPTZ
);
CREATE INDEX jadpo_sessions_user ON jadpo_sessions (user_id);
CREATE INDEX jadpo_sessions_expires ON jadpo_sessions (expires_at);
