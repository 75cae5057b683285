-- Jadpo system tables, PostgreSQL v14: passkeys (WebAuthn) and the ceremonies under way.
-- Immutable once released: add a new version instead of editing this file.
--
-- jadpo_passkeys: one row per registered passkey — its credential id (base64url, unique across
-- the application), its user, the user handle the device keeps (base64url; one per user), the
-- stored credential (its public key and extension state) and its counters (signature count,
-- backup state: what changes at each sign-in), both in the form `encoding` names, when it was
-- registered and last used. A passkey holds no secret: the private key never leaves the device.
CREATE TABLE jadpo_passkeys (
    credential_id  TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL,
    user_handle    TEXT NOT NULL,
    credential     BYTEA NOT NULL,
    counters       BYTEA NOT NULL,
    encoding       SMALLINT,
    registered_at  TIMESTAMPTZ NOT NULL,
    last_used_at   TIMESTAMPTZ
);
CREATE INDEX jadpo_passkeys_user ON jadpo_passkeys (user_id);

-- jadpo_passkey_challenges: one row per ceremony under way, by its challenge's verifier (the
-- SHA-256 of the challenge; the challenge itself is sent to the browser and not kept): whether it
-- registers a passkey or signs in, the user it is bound to (registration: the signed-in user),
-- the ceremony's state with its challenge blanked out, in the form `encoding` names, and when it
-- expires. Finishing a ceremony deletes its row, so a challenge is used once; housekeeping
-- deletes the expired ones.
CREATE TABLE jadpo_passkey_challenges (
    challenge_verifier TEXT PRIMARY KEY,
    purpose            TEXT NOT NULL,
    bound_to           TEXT,
    state              BYTEA NOT NULL,
    encoding           SMALLINT,
    expires_at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX jadpo_passkey_challenges_expires ON jadpo_passkey_challenges (expires_at);
