//! Sign-in request statements (SQLite, times in Unix epoch milliseconds): one row per address digest, verifiers only.

use jadpo_store_sql::tables::sign_in;
use jadpo_store_sql::{SignInSql, sql};

/// The sign-in request statements.
pub(crate) static SIGN_IN: SignInSql = SignInSql {
    request_ensure: sql!(
        sign_in::RequestEnsure,
        "INSERT INTO jadpo_sign_in_requests (address_digest, nonce, window_started_at, \
        sends_in_window, wrong_codes, requested_at, expires_at) VALUES ($address_digest, '', $now, 0, 0, $now, $now) \
        ON CONFLICT (address_digest) DO NOTHING",
    ),
    request_find: sql!(
        sign_in::RequestFind,
        "SELECT nonce, window_started_at, sends_in_window, code_verifier, wrong_codes, \
        expires_at, used_at FROM jadpo_sign_in_requests WHERE address_digest = $address_digest",
    ),
    request_renew: sql!(
        sign_in::RequestRenew,
        "UPDATE jadpo_sign_in_requests SET nonce = $nonce, requested_at = $now, expires_at = $now, \
        window_started_at = $window_started_at, sends_in_window = $sends_in_window, link_verifier = NULL, \
        code_verifier = NULL, wrong_codes = 0, used_at = NULL WHERE address_digest = $address_digest",
    ),
    request_arm: sql!(
        sign_in::RequestArm,
        "UPDATE jadpo_sign_in_requests SET link_verifier = $link_verifier, code_verifier = $code_verifier, \
        expires_at = $expires_at, wrong_codes = 0 \
        WHERE address_digest = $address_digest AND nonce = $nonce AND used_at IS NULL",
    ),
    request_redeem_link: sql!(
        sign_in::RequestRedeemLink,
        "UPDATE jadpo_sign_in_requests SET used_at = $now, link_verifier = NULL, \
        code_verifier = NULL WHERE address_digest = $address_digest AND link_verifier = $link_verifier \
        AND used_at IS NULL AND expires_at > $now",
    ),
    request_redeem_code: sql!(
        sign_in::RequestRedeemCode,
        "UPDATE jadpo_sign_in_requests SET used_at = $now, link_verifier = NULL, \
        code_verifier = NULL WHERE address_digest = $address_digest AND code_verifier = $code_verifier \
        AND used_at IS NULL AND expires_at > $now",
    ),
    request_wrong_code: sql!(
        sign_in::RequestWrongCode,
        "UPDATE jadpo_sign_in_requests SET wrong_codes = $wrong_codes WHERE address_digest = $address_digest",
    ),
    request_lock: sql!(
        sign_in::RequestLock,
        "UPDATE jadpo_sign_in_requests SET link_verifier = NULL, code_verifier = NULL \
        WHERE address_digest = $address_digest",
    ),
    link_find: sql!(
        sign_in::LinkFind,
        "SELECT user_id FROM jadpo_sign_in_links WHERE issuer = $issuer AND subject = $subject",
    ),
    link_insert: sql!(
        sign_in::LinkInsert,
        "INSERT INTO jadpo_sign_in_links (issuer, subject, user_id, linked_at, last_signed_in) \
        VALUES ($issuer, $subject, $user_id, $now, $now)",
    ),
    link_seen: sql!(
        sign_in::LinkSeen,
        "UPDATE jadpo_sign_in_links SET last_signed_in = $now WHERE issuer = $issuer AND subject = $subject",
    ),
    source_ensure: sql!(
        sign_in::SourceEnsure,
        "INSERT INTO jadpo_sign_in_sources (source_digest, window_started_at, sends_in_window, \
        wrong_codes) VALUES ($source_digest, $now, 0, 0) ON CONFLICT (source_digest) DO NOTHING",
    ),
    source_find: sql!(
        sign_in::SourceFind,
        "SELECT window_started_at, sends_in_window, wrong_codes FROM jadpo_sign_in_sources \
        WHERE source_digest = $source_digest",
    ),
    source_set: sql!(
        sign_in::SourceSet,
        "UPDATE jadpo_sign_in_sources SET window_started_at = $window_started_at, sends_in_window = $sends_in_window, \
        wrong_codes = $wrong_codes WHERE source_digest = $source_digest",
    ),
    sends_since: sql!(
        sign_in::SendsSince,
        "SELECT coalesce(sum(sends_in_window), 0) AS n FROM jadpo_sign_in_requests \
        WHERE window_started_at > $since",
    ),
    token_spend: sql!(
        sign_in::TokenSpend,
        "INSERT INTO jadpo_used_tokens (token_digest, expires_at) VALUES ($token_digest, $expires_at) \
        ON CONFLICT (token_digest) DO NOTHING",
    ),
};
