//! Sign-in request statements (SQLite, times in Unix epoch milliseconds): one row per address digest, verifiers only.

use jadpo_store_sql::{SignInSql, Statement};

/// The sign-in request statements.
pub(crate) static SIGN_IN: SignInSql = SignInSql {
    request_ensure: Statement::new(
        "INSERT INTO jadpo_sign_in_requests (address_digest, nonce, window_started_at, \
        sends_in_window, wrong_codes, requested_at, expires_at) VALUES ($1, '', $2, 0, 0, $2, $2) \
        ON CONFLICT (address_digest) DO NOTHING",
    ),
    request_find: Statement::new(
        "SELECT nonce, window_started_at, sends_in_window, code_verifier, wrong_codes, \
        expires_at, used_at FROM jadpo_sign_in_requests WHERE address_digest = $1",
    ),
    request_renew: Statement::new(
        "UPDATE jadpo_sign_in_requests SET nonce = $2, requested_at = $3, expires_at = $3, \
        window_started_at = $4, sends_in_window = $5, link_verifier = NULL, \
        code_verifier = NULL, wrong_codes = 0, used_at = NULL WHERE address_digest = $1",
    ),
    request_arm: Statement::new(
        "UPDATE jadpo_sign_in_requests SET link_verifier = $3, code_verifier = $4, \
        expires_at = $5, wrong_codes = 0 \
        WHERE address_digest = $1 AND nonce = $2 AND used_at IS NULL",
    ),
    request_redeem_link: Statement::new(
        "UPDATE jadpo_sign_in_requests SET used_at = $3, link_verifier = NULL, \
        code_verifier = NULL WHERE address_digest = $1 AND link_verifier = $2 \
        AND used_at IS NULL AND expires_at > $3",
    ),
    request_redeem_code: Statement::new(
        "UPDATE jadpo_sign_in_requests SET used_at = $3, link_verifier = NULL, \
        code_verifier = NULL WHERE address_digest = $1 AND code_verifier = $2 \
        AND used_at IS NULL AND expires_at > $3",
    ),
    request_wrong_code: Statement::new(
        "UPDATE jadpo_sign_in_requests SET wrong_codes = $2 WHERE address_digest = $1",
    ),
    request_lock: Statement::new(
        "UPDATE jadpo_sign_in_requests SET link_verifier = NULL, code_verifier = NULL \
        WHERE address_digest = $1",
    ),
    link_find: Statement::new(
        "SELECT user_id FROM jadpo_sign_in_links WHERE issuer = $1 AND subject = $2",
    ),
    link_insert: Statement::new(
        "INSERT INTO jadpo_sign_in_links (issuer, subject, user_id, linked_at, last_signed_in) \
        VALUES ($1, $2, $3, $4, $4)",
    ),
    link_seen: Statement::new(
        "UPDATE jadpo_sign_in_links SET last_signed_in = $3 WHERE issuer = $1 AND subject = $2",
    ),
    source_ensure: Statement::new(
        "INSERT INTO jadpo_sign_in_sources (source_digest, window_started_at, sends_in_window, \
        wrong_codes) VALUES ($1, $2, 0, 0) ON CONFLICT (source_digest) DO NOTHING",
    ),
    source_find: Statement::new(
        "SELECT window_started_at, sends_in_window, wrong_codes FROM jadpo_sign_in_sources \
        WHERE source_digest = $1",
    ),
    source_set: Statement::new(
        "UPDATE jadpo_sign_in_sources SET window_started_at = $2, sends_in_window = $3, \
        wrong_codes = $4 WHERE source_digest = $1",
    ),
    sends_since: Statement::new(
        "SELECT coalesce(sum(sends_in_window), 0) AS n FROM jadpo_sign_in_requests \
        WHERE window_started_at > $1",
    ),
    token_spend: Statement::new(
        "INSERT INTO jadpo_used_tokens (token_digest, expires_at) VALUES ($1, $2) \
        ON CONFLICT (token_digest) DO NOTHING",
    ),
};
