//! The users' session role: API tokens issued (their verifier stored), verified, and ended.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::model::user_session::{IssuedToken, TokenError};
use crate::transaction::Transaction;

/// The role that keeps users' sessions (`jadpo_sessions`).
#[async_trait]
pub trait UserSessionStore: Send + Sync {
    /// Issues an API token for `user_id` inside `tx`, working until `expires_at`.
    async fn api_token_issue(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        expires_at: DateTime<Utc>,
        clock: &dyn Clock,
    ) -> Result<IssuedToken, TokenError>;

    /// The user a presented token authenticates at `now`, or `None` (unknown, ended or expired).
    async fn user_session_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError>;

    /// Ends every live session of `user_id` at `now` ("sign out everywhere"); how many.
    async fn user_sessions_end(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
}
