//! The users' session role implemented once over each adapter's own SQL: only a token's verifier
//! is stored, and verifying a token is one read.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::clock::Clock;
use jadpo_core::error::StoreError;
use jadpo_core::id::new_id;
use jadpo_core::model::service_key::verifier;
use jadpo_core::model::user_session::{
    IssuedToken, SessionKind, TokenError, is_token, new_token, valid_user,
};
use jadpo_core::ports::UserSessionStore;
use jadpo_core::sql::SqlValue;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;

#[async_trait]
impl<C: TransactionalStore> UserSessionStore for SqlStore<C> {
    async fn api_token_issue(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        expires_at: DateTime<Utc>,
        clock: &dyn Clock,
    ) -> Result<IssuedToken, TokenError> {
        if !valid_user(user_id) {
            return Err(TokenError::BadUser(user_id.to_owned()));
        }
        let now = clock.now();
        if expires_at <= now {
            return Err(TokenError::NoLifetime);
        }
        let secret = new_token()?;
        let id = new_id(clock).to_string();
        let params = [
            id.as_str().into(),
            user_id.into(),
            SessionKind::ApiToken.as_str().into(),
            verifier(&secret).into(),
            now.into(),
            SqlValue::Null,
            expires_at.into(),
        ];
        self.sql.user_sessions.session_insert.execute(tx, params).await?;
        Ok(IssuedToken { secret, id, user_id: user_id.to_owned(), expires_at })
    }

    async fn user_session_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        if !is_token(presented) {
            return Ok(None);
        }
        let params = [verifier(presented).into(), now.into()];
        let rows = self.sql.user_sessions.session_find_live.query_once(self, params).await?;
        rows.first().map(|r| r.get_str("user_id").map(str::to_owned)).transpose()
    }

    async fn user_sessions_end(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        self.sql.user_sessions.sessions_end.execute(tx, [user_id.into(), now.into()]).await
    }
}
