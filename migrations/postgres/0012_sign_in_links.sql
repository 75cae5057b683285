-- Jadpo system tables, PostgreSQL v12: sign-in links, from an external identity to a user.
-- Immutable once released: add a new version instead of editing this file.
--
-- One row per (issuer, subject) an external token (an OpenID Connect ID token) was first signed
-- in with: the user the application's first-sign-in policy linked it to, when, and when it was
-- last used. A later token with the same issuer and subject signs that user in.
CREATE TABLE jadpo_sign_in_links (
    issuer          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    linked_at       TIMESTAMPTZ NOT NULL,
    last_signed_in  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX jadpo_sign_in_links_user ON jadpo_sign_in_links (user_id);
