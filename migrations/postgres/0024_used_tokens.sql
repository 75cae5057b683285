-- Jadpo system tables, PostgreSQL v24: the ID tokens that signed someone in, until they expire.
-- Immutable once released: add a new version instead of editing this file.
--
-- An OpenID Connect ID token is a bearer proof for its lifetime: whoever holds a copy (a log, a
-- proxy, a browser extension) could sign in with it again. The sign-in that accepts a token
-- records its SHA-256 here in the transaction that starts the session, and a second sign-in
-- with the same token finds the row and is refused. Housekeeping deletes a row once the token it
-- names has expired (it would be refused as expired by then).
CREATE TABLE jadpo_used_tokens (
    token_digest TEXT PRIMARY KEY,
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX jadpo_used_tokens_expires ON jadpo_used_tokens (expires_at);
