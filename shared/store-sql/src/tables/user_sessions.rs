//! `UserSessionSql`: the slots of the users' session role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_sessions`.
    pub struct UserSessionSql {
        /// One session, stored as its token's verifier; `idle_limit_s` may be NULL (no idle limit).
        session_insert(id, user_id, kind, token_verifier, now, idle_limit_s, expires_at),
        /// Returns `user_id` of a live session: not ended, not past its end, not idle past its
        /// limit. A read only: an API token's check adds no write to the request it authenticates.
        session_find_live(token_verifier, now),
        /// Ends the live sessions of a user.
        sessions_end(user_id, now),
    }
}
