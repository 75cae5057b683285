//! Users' session statements (PostgreSQL): only token verifiers are stored.

use jadpo_store_sql::{Statement, UserSessionSql};

/// The users' session statements.
pub static USER_SESSIONS: UserSessionSql = UserSessionSql {
    session_insert: Statement::new(
        "INSERT INTO jadpo_sessions (id, user_id, kind, token_verifier, started_at, last_seen_at, \
        idle_limit_s, expires_at) VALUES ($1, $2, $3, $4, $5, $5, $6, $7)",
    ),
    session_find_live: Statement::new(
        "SELECT user_id FROM jadpo_sessions WHERE token_verifier = $1 AND ended_at IS NULL \
        AND expires_at > $2 \
        AND (idle_limit_s IS NULL OR last_seen_at + idle_limit_s * interval '1 second' > $2)",
    ),
    sessions_end: Statement::new(
        "UPDATE jadpo_sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL",
    ),
};
