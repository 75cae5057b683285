//! Users' session statements (PostgreSQL): only token verifiers are stored.

use jadpo_store_sql::tables::user_sessions;
use jadpo_store_sql::{UserSessionSql, sql};

/// The users' session statements.
pub(crate) static USER_SESSIONS: UserSessionSql = UserSessionSql {
    session_insert: sql!(
        user_sessions::SessionInsert,
        "INSERT INTO jadpo_sessions (id, user_id, kind, token_verifier, csrf_verifier, \
        started_at, last_seen_at, idle_limit_s, expires_at) \
        VALUES ($id, $user_id, $kind, $token_verifier, $csrf_verifier, $now, $now, $idle_limit_s, $expires_at)",
    ),
    session_find_live: sql!(
        user_sessions::SessionFindLive,
        "SELECT id, user_id, csrf_verifier, last_seen_at, started_at FROM jadpo_sessions \
        WHERE token_verifier = $token_verifier AND kind = $kind AND ended_at IS NULL AND expires_at > $now \
        AND (idle_limit_s IS NULL OR last_seen_at + idle_limit_s * interval '1 second' > $now)",
    ),
    session_touch: sql!(
        user_sessions::SessionTouch,
        "UPDATE jadpo_sessions SET last_seen_at = $now WHERE id = $id AND last_seen_at < $now",
    ),
    session_end: sql!(
        user_sessions::SessionEnd,
        "UPDATE jadpo_sessions SET ended_at = $now WHERE id = $id AND ended_at IS NULL",
    ),
    sessions_end: sql!(
        user_sessions::SessionsEnd,
        "UPDATE jadpo_sessions SET ended_at = $now WHERE user_id = $user_id AND ended_at IS NULL",
    ),
};
