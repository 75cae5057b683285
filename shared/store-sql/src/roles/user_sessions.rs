//! The users' session role implemented once over each adapter's own SQL: only a token's (and a
//! browser session's CSRF token's) verifier is stored, and verifying a token is one read.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::clock::Clock;
use jadpo_core::error::StoreError;
use jadpo_core::id::new_id;
use jadpo_core::model::principal::EntityRecord;
use jadpo_core::model::service_key::verifier;
use jadpo_core::model::user_session::{
    BROWSER_PREFIX, BrowserLimits, BrowserSession, IssuedToken, LiveSession, SessionKind,
    TOKEN_PREFIX, TokenError, has_shape, new_browser_secrets, new_token, valid_user,
};
use jadpo_core::ports::UserSessionStore;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::statement::Params;
use crate::store::SqlStore;
use crate::tables::user_sessions;

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
        let params = user_sessions::SessionInsert {
            id: id.as_str().into(),
            user_id: user_id.into(),
            kind: SessionKind::ApiToken.as_str().into(),
            token_verifier: verifier(&secret),
            csrf_verifier: None,
            now,
            idle_limit_s: None,
            expires_at,
        };
        self.sql.user_sessions.session_insert.execute(tx, params).await?;
        Ok(IssuedToken { secret, id, user_id: user_id.to_owned(), expires_at })
    }

    async fn browser_session_start(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        limits: BrowserLimits,
        clock: &dyn Clock,
    ) -> Result<BrowserSession, TokenError> {
        if !valid_user(user_id) {
            return Err(TokenError::BadUser(user_id.to_owned()));
        }
        let now = clock.now();
        let expires_at = jadpo_core::clock::after(now, limits.absolute);
        let idle = i64::try_from(limits.idle.as_secs()).unwrap_or(i64::MAX);
        if idle == 0 || expires_at <= now {
            return Err(TokenError::NoLifetime);
        }
        let (token, csrf) = new_browser_secrets()?;
        let id = new_id(clock).to_string();
        let params = user_sessions::SessionInsert {
            id: id.as_str().into(),
            user_id: user_id.into(),
            kind: SessionKind::Browser.as_str().into(),
            token_verifier: verifier(&token),
            csrf_verifier: verifier(&csrf).into(),
            now,
            idle_limit_s: idle.into(),
            expires_at,
        };
        self.sql.user_sessions.session_insert.execute(tx, params).await?;
        Ok(BrowserSession { token, csrf, id, user_id: user_id.to_owned(), expires_at })
    }

    async fn user_session_verify(
        &self,
        presented: &str,
        kind: SessionKind,
        now: DateTime<Utc>,
        users: Option<EntityRecord<'_>>,
    ) -> Result<Option<LiveSession>, StoreError> {
        let prefix = match kind {
            SessionKind::ApiToken => TOKEN_PREFIX,
            SessionKind::Browser => BROWSER_PREFIX,
        };
        if !has_shape(presented, prefix) {
            return Ok(None);
        }
        let params = user_sessions::SessionFindLive {
            token_verifier: verifier(presented),
            kind: kind.as_str().into(),
            now,
        };
        let find = self.sql.user_sessions.session_find_live;
        let rows = match users {
            None => find.query_once(self, params).await?,
            Some(u) => {
                self.query_once(&u.narrow(find.text(), "user_id"), params.bind().as_ref()).await?
            }
        };
        rows.first()
            .map(|r| {
                crate::read_row!(r => LiveSession {
                    id, user_id, csrf_verifier, last_seen_at, started_at,
                })
            })
            .transpose()
    }

    async fn user_session_touch(&self, id: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.sql
            .user_sessions
            .session_touch
            .execute_once(self, user_sessions::SessionTouch { id: id.into(), now })
            .await?;
        Ok(())
    }

    async fn user_session_end(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self
            .sql
            .user_sessions
            .session_end
            .execute(tx, user_sessions::SessionEnd { id: id.into(), now })
            .await?
            == 1)
    }

    async fn user_sessions_end(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        self.sql
            .user_sessions
            .sessions_end
            .execute(tx, user_sessions::SessionsEnd { user_id: user_id.into(), now })
            .await
    }
}
