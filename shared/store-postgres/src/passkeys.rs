//! Passkey statements (PostgreSQL): registered passkeys and the ceremonies under way; a passkey
//! is read locked, so two sign-ins with it update its counters one after the other.

use jadpo_store_sql::tables::passkeys;
use jadpo_store_sql::{PasskeySql, sql};

/// The passkey statements.
pub(crate) static PASSKEYS: PasskeySql = PasskeySql {
    challenge_insert: sql!(
        passkeys::ChallengeInsert,
        "INSERT INTO jadpo_passkey_challenges (challenge_verifier, purpose, bound_to, state, \
        encoding, expires_at) VALUES ($challenge_verifier, $purpose, $bound_to, $state, $encoding, $expires_at)",
    ),
    challenge_take: sql!(
        passkeys::ChallengeTake,
        "DELETE FROM jadpo_passkey_challenges WHERE challenge_verifier = $challenge_verifier AND purpose = $purpose \
        RETURNING bound_to, state, encoding, expires_at",
    ),
    of_user: sql!(
        passkeys::OfUser,
        "SELECT * FROM jadpo_passkeys WHERE user_id = $user_id ORDER BY registered_at, credential_id",
    ),
    insert: sql!(
        passkeys::Insert,
        "INSERT INTO jadpo_passkeys (credential_id, user_id, user_handle, credential, counters, \
        encoding, registered_at) VALUES ($credential_id, $user_id, $user_handle, $credential, $counters, $encoding, $now) \
        ON CONFLICT (credential_id) DO NOTHING",
    ),
    find: sql!(
        passkeys::Find,
        "SELECT * FROM jadpo_passkeys WHERE credential_id = $credential_id FOR UPDATE"
    ),
    used: sql!(
        passkeys::Used,
        "UPDATE jadpo_passkeys SET counters = $counters, last_used_at = $now WHERE credential_id = $credential_id",
    ),
    listed: sql!(
        passkeys::Listed,
        "SELECT credential_id, registered_at, last_used_at FROM jadpo_passkeys WHERE user_id = $user_id \
        ORDER BY registered_at, credential_id",
    ),
    remove: sql!(
        passkeys::Remove,
        "DELETE FROM jadpo_passkeys WHERE credential_id = $credential_id AND user_id = $user_id"
    ),
    remove_all: sql!(passkeys::RemoveAll, "DELETE FROM jadpo_passkeys WHERE user_id = $user_id"),
};
