//! `UserSessionSql`: the slots of the users' session role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_sessions`.
    pub struct UserSessionSql {
        /// One session, stored as its token's verifier (and a browser session's CSRF token's;
        /// NULL for an API token); `idle_limit_s` may be NULL (no idle limit).
        session_insert: SessionInsert(
            id: String,
            user_id: String,
            kind: String,
            token_verifier: String,
            csrf_verifier: Option<String>,
            now: DateTime<Utc>,
            idle_limit_s: Option<i64>,
            expires_at: DateTime<Utc>,
        ),
        /// Returns `id`, `user_id`, `csrf_verifier` and `last_seen_at` of a live session of the
        /// kind: not ended, not past its end, not idle past its limit. A read only.
        session_find_live: SessionFindLive(
            token_verifier: String,
            kind: String,
            now: DateTime<Utc>,
        ),
        /// Records a session as seen now.
        session_touch: SessionTouch(id: String, now: DateTime<Utc>),
        /// Ends one live session.
        session_end: SessionEnd(id: String, now: DateTime<Utc>),
        /// Ends the live sessions of a user.
        sessions_end: SessionsEnd(user_id: String, now: DateTime<Utc>),
    }
}
