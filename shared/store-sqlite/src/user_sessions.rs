//! Users' session statements (SQLite, times in Unix epoch milliseconds): only token verifiers are stored.

use jadpo_store_sql::{Statement, UserSessionSql};

/// The users' session statements.
pub(crate) static USER_SESSIONS: UserSessionSql = UserSessionSql {
    session_insert: Statement::new(
        "INSERT INTO jadpo_sessions (id, user_id, kind, token_verifier, csrf_verifier, \
        started_at, last_seen_at, idle_limit_s, expires_at) \
        VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8)",
    ),
    session_find_live: Statement::new(
        "SELECT id, user_id, csrf_verifier, last_seen_at, started_at FROM jadpo_sessions \
        WHERE token_verifier = $1 AND kind = $2 AND ended_at IS NULL AND expires_at > $3 \
        AND (idle_limit_s IS NULL OR last_seen_at + idle_limit_s * 1000 > $3)",
    ),
    session_touch: Statement::new(
        "UPDATE jadpo_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2",
    ),
    session_end: Statement::new(
        "UPDATE jadpo_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL",
    ),
    sessions_end: Statement::new(
        "UPDATE jadpo_sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL",
    ),
};
