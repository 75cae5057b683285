//! Who a credential is: the one use case every edge calls to turn what a request presented
//! into its principal.
//!
//! A credential is a service key or an API token (presented as a bearer) or a browser session's
//! token (presented as a cookie). Each is one read of its verifier joined with its principal's
//! record (a service's, a user's), so a deleted service or user authenticates nobody. A browser
//! session's write must also present its CSRF token, compared with its stored verifier; its
//! `last_seen_at` is written at most once a minute. The edge only reads headers and words the
//! refusal.

use chrono::{DateTime, Utc};
use jadpo_core::StoreError;
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::{Scopes, verifier};
use jadpo_core::model::user_session::{LiveSession, SessionKind, is_token};
use jadpo_core::ports::UserSessionStore;

use crate::context::Engine;

/// A browser session's `last_seen_at` is written at most this often.
const TOUCH_EVERY: chrono::Duration = chrono::Duration::seconds(60);

/// What a request presented.
#[derive(Debug, Clone, Copy)]
pub enum Credential<'a> {
    /// `Authorization: Bearer …`: a service key or an API token.
    Bearer(&'a str),
    /// A browser session's cookie; `csrf`: the CSRF token a write presented (`None` for a read,
    /// which needs none).
    Browser { token: &'a str, write: bool, csrf: Option<&'a str> },
}

/// The kinds of credential, as refusals name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    ServiceKey,
    ApiToken,
    BrowserSession,
}

impl std::fmt::Display for CredentialKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ServiceKey => "service key",
            Self::ApiToken => "API token",
            Self::BrowserSession => "browser session",
        })
    }
}

/// A principal resolved from a live credential.
#[derive(Debug, Clone, PartialEq)]
pub struct Authenticated {
    pub principal: Principal,
    /// What a service key may do; `None` for a user.
    pub scopes: Option<Scopes>,
    /// The user session (API token or browser session) that authenticated: its id and start.
    pub session: Option<(String, DateTime<Utc>)>,
}

/// Why a credential authenticates nobody. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A user's credential where the application declares no users: nobody can hold one.
    #[error("this application has no users: a {0} is refused")]
    NoUsers(CredentialKind),
    /// The credential is unknown, ended, expired or revoked (or its principal's record is gone).
    #[error("unknown, ended or expired {0}")]
    Unknown(CredentialKind),
    /// A browser session's write without its CSRF token, or with another.
    #[error("a write through a browser session carries its CSRF token")]
    Csrf,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The principal `credential` stands for.
pub async fn authenticate(
    engine: &Engine,
    credential: Credential<'_>,
) -> Result<Authenticated, AuthError> {
    let now = engine.clock.now();
    match credential {
        Credential::Bearer(presented) if is_token(presented) => {
            let (_, session) = user_session(engine, presented, SessionKind::ApiToken, now).await?;
            Ok(user(session))
        }
        Credential::Bearer(presented) => service_key(engine, presented, now).await,
        Credential::Browser { token, write, csrf } => {
            let (store, session) = user_session(engine, token, SessionKind::Browser, now).await?;
            if write && !csrf_matches(csrf, &session) {
                return Err(AuthError::Csrf);
            }
            touch_if_due(store, &session, now).await;
            Ok(user(session))
        }
    }
}

fn user(session: LiveSession) -> Authenticated {
    Authenticated {
        principal: Principal::User(session.user_id),
        scopes: None,
        session: Some((session.id, session.started_at)),
    }
}

async fn service_key(
    engine: &Engine,
    presented: &str,
    now: DateTime<Utc>,
) -> Result<Authenticated, AuthError> {
    let store = engine.store(engine.app.services_store())?;
    let services = engine.app.services().map(jadpo_application::ServiceEntity::record);
    match store.service_key_verify(presented, now, services).await? {
        Some(key) => Ok(Authenticated {
            principal: Principal::Service(key.service),
            scopes: Some(key.scopes),
            session: None,
        }),
        None => Err(AuthError::Unknown(CredentialKind::ServiceKey)),
    }
}

/// The live session `presented` is, with the users' store it was read from.
async fn user_session<'e>(
    engine: &'e Engine,
    presented: &str,
    kind: SessionKind,
    now: DateTime<Utc>,
) -> Result<(&'e dyn UserSessionStore, LiveSession), AuthError> {
    let what = match kind {
        SessionKind::ApiToken => CredentialKind::ApiToken,
        SessionKind::Browser => CredentialKind::BrowserSession,
    };
    // Without users the stores have no sessions table to read.
    let Some(users) = engine.app.users() else {
        return Err(AuthError::NoUsers(what));
    };
    let store = engine.store(&users.store)?.as_ref();
    let session = store.user_session_verify(presented, kind, now, Some(users.record())).await?;
    Ok((store, session.ok_or(AuthError::Unknown(what))?))
}

fn csrf_matches(presented: Option<&str>, session: &LiveSession) -> bool {
    presented
        .zip(session.csrf_verifier.as_deref())
        .is_some_and(|(token, stored)| verifier(token.trim()) == stored)
}

/// A failed touch costs the session a minute of idle allowance, not the request.
async fn touch_if_due(store: &dyn UserSessionStore, session: &LiveSession, now: DateTime<Utc>) {
    if now - session.last_seen_at < TOUCH_EVERY {
        return;
    }
    if let Err(e) = store.user_session_touch(&session.id, now).await {
        tracing::warn!(error = %e, "browser session not touched");
    }
}
