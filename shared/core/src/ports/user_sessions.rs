//! The users' session role: API tokens and browser sessions started (their verifiers stored),
//! verified, touched and ended.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::model::principal::EntityRecord;
use crate::model::user_session::{
    BrowserLimits, BrowserSession, IssuedToken, LiveSession, SessionKind, TokenError,
};
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

    /// Starts a browser session for `user_id` inside `tx` (a sign-in's transaction).
    async fn browser_session_start(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        limits: BrowserLimits,
        clock: &dyn Clock,
    ) -> Result<BrowserSession, TokenError>;

    /// The live session of `kind` a presented token belongs to at `now`, or `None` (unknown,
    /// another kind, ended, expired or idle past its limit, or — with `users` — its user's record
    /// is gone). One statement, the user's record read with the session.
    async fn user_session_verify(
        &self,
        presented: &str,
        kind: SessionKind,
        now: DateTime<Utc>,
        users: Option<EntityRecord<'_>>,
    ) -> Result<Option<LiveSession>, StoreError>;

    /// Records that session `id` was seen at `now` (its idle limit counts from there).
    async fn user_session_touch(&self, id: &str, now: DateTime<Utc>) -> Result<(), StoreError>;

    /// Ends session `id` at `now` (sign-out); whether it was live.
    async fn user_session_end(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Ends every live session of `user_id` at `now` ("sign out everywhere"); how many.
    async fn user_sessions_end(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
}
