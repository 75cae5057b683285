//! `jadpo tokens issue | end`: users' API tokens as operators issue and end them, each change
//! recorded in `jadpo_operator_actions` in the same transaction ([`Change`]). Tokens live in the
//! users' store (the user entity's, else the default store); a token is issued only for a user
//! the application's user entity holds.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::model::user_session::{IssuedToken, TokenError, valid_user};
use jadpo_core::{Store, StoreError};
use serde_json::{Value, json};

use crate::context::Engine;
use crate::operate::{Change, Operator};

/// Users' API tokens as operators see and change them.
pub struct TokenOps<'a> {
    engine: &'a Engine,
}

impl<'a> TokenOps<'a> {
    /// The tokens of `engine`'s application (in its users' store).
    pub fn new(engine: &'a Engine) -> Self {
        Self { engine }
    }

    /// The users' store: tokens live beside the users they belong to.
    fn store(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(Arc::clone(self.engine.store(self.engine.app.users_store())?))
    }

    /// Issues an API token for `user_id` as `operator`, working until `expires_at`; the secret
    /// is in the result, shown once.
    pub async fn issue(
        &self,
        user_id: &str,
        expires_at: DateTime<Utc>,
        operator: &Operator,
    ) -> Result<IssuedToken, TokenError> {
        let store = self.store()?;
        let clock = self.engine.clock.as_ref();
        let mut change = Change::begin(store.as_ref(), operator, clock).await?;
        let result = async {
            if !valid_user(user_id) {
                return Err(TokenError::BadUser(user_id.to_owned()));
            }
            if let Some(users) = self.engine.app.users() {
                let found = change
                    .tx()
                    .query_opt(&users.record().find_by_id_sql(), &[user_id.into()])
                    .await?;
                if found.is_none() {
                    return Err(TokenError::UnknownUser(user_id.to_owned()));
                }
            }
            let token = store.api_token_issue(change.tx(), user_id, expires_at, clock).await?;
            let detail = format!("user {user_id}, until {}", expires_at.to_rfc3339());
            change.record(&action("tokens.issue", &token.id, Value::Null, Some(detail))).await?;
            Ok(token)
        }
        .await;
        change.finish(result).await
    }

    /// Ends every live session of `user_id` as `operator` ("sign out everywhere"); how many.
    pub async fn end_all(&self, user_id: &str, operator: &Operator) -> Result<u64, TokenError> {
        let store = self.store()?;
        let mut change =
            Change::begin(store.as_ref(), operator, self.engine.clock.as_ref()).await?;
        let result = async {
            let now = change.now();
            let ended = store.user_sessions_end(change.tx(), user_id, now).await?;
            let state = json!({"live_sessions": ended});
            change.record(&action("tokens.end_all", user_id, state, None)).await?;
            Ok(ended)
        }
        .await;
        change.finish(result).await
    }
}

fn action<'a>(
    name: &'a str,
    item: &'a str,
    before: Value,
    detail: Option<String>,
) -> OperatorAction<'a> {
    OperatorAction { action: name, item_kind: "user_session", item, item_state: before, detail }
}

/// Issues a token in a transaction of its own, with no operator record: for fixtures and tests.
pub async fn issue_unrecorded(
    store: &dyn Store,
    user_id: &str,
    expires_at: DateTime<Utc>,
    clock: &dyn jadpo_core::Clock,
) -> Result<IssuedToken, TokenError> {
    let mut tx = store.begin().await?;
    let result = store.api_token_issue(tx.as_mut(), user_id, expires_at, clock).await;
    jadpo_core::commit_or_rollback(tx, result).await
}
