//! Passkey statements (SQLite, times in Unix epoch milliseconds): registered passkeys and the
//! ceremonies under way.

use jadpo_store_sql::{PasskeySql, Statement};

/// The passkey statements.
pub(crate) static PASSKEYS: PasskeySql = PasskeySql {
    challenge_insert: Statement::new(
        "INSERT INTO jadpo_passkey_challenges (challenge_verifier, purpose, bound_to, state, \
        encoding, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
    ),
    challenge_take: Statement::new(
        "DELETE FROM jadpo_passkey_challenges WHERE challenge_verifier = $1 AND purpose = $2 \
        RETURNING bound_to, state, encoding, expires_at",
    ),
    of_user: Statement::new(
        "SELECT * FROM jadpo_passkeys WHERE user_id = $1 ORDER BY registered_at, credential_id",
    ),
    insert: Statement::new(
        "INSERT INTO jadpo_passkeys (credential_id, user_id, user_handle, credential, counters, \
        encoding, registered_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
        ON CONFLICT (credential_id) DO NOTHING",
    ),
    find: Statement::new("SELECT * FROM jadpo_passkeys WHERE credential_id = $1"),
    used: Statement::new(
        "UPDATE jadpo_passkeys SET counters = $2, last_used_at = $3 WHERE credential_id = $1",
    ),
    listed: Statement::new(
        "SELECT credential_id, registered_at, last_used_at FROM jadpo_passkeys WHERE user_id = $1 \
        ORDER BY registered_at, credential_id",
    ),
    remove: Statement::new("DELETE FROM jadpo_passkeys WHERE credential_id = $1 AND user_id = $2"),
    remove_all: Statement::new("DELETE FROM jadpo_passkeys WHERE user_id = $1"),
};
