//! `UserSessionSql`: the slots of the users' session role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_sessions`.
    pub struct UserSessionSql {
        /// One session, stored as its token's verifier (and a browser session's CSRF token's;
        /// NULL for an API token); `idle_limit_s` may be NULL (no idle limit).
        session_insert(id, user_id, kind, token_verifier, csrf_verifier, now, idle_limit_s, expires_at),
        /// Returns `id`, `user_id`, `csrf_verifier` and `last_seen_at` of a live session of the
        /// kind: not ended, not past its end, not idle past its limit. A read only.
        session_find_live(token_verifier, kind, now),
        /// Records a session as seen now.
        session_touch(id, now),
        /// Ends one live session.
        session_end(id, now),
        /// Ends the live sessions of a user.
        sessions_end(user_id, now),
    }
}
