//! Users' sessions: how a person is known to the HTTP API. An API token is `jadpo_at_` and 64 hex
//! digits, shown once; the store keeps only its verifier (the SHA-256 of the whole token, as for
//! service keys), the user, and when the session started, was last seen and ends. Ending a
//! session (sign-out, "sign out everywhere") and its absolute end stop it authenticating anyone.

use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::service_key::random_secret;

/// What every API token starts with.
pub const TOKEN_PREFIX: &str = "jadpo_at_";
/// What every browser session's token (the `jadpo_session` cookie) starts with.
pub const BROWSER_PREFIX: &str = "jadpo_bs_";
/// What every browser session's CSRF token starts with.
pub(crate) const CSRF_PREFIX: &str = "jadpo_cs_";

/// The kinds of session `jadpo_sessions` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    /// A token a program presents as `Authorization: Bearer jadpo_at_…`.
    ApiToken,
    /// A browser's `jadpo_session` cookie; its writes also need the session's CSRF token.
    Browser,
}

impl SessionKind {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiToken => "api_token",
            Self::Browser => "browser",
        }
    }
}

/// A newly issued API token: the secret, shown once, and its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The token to give the user; never stored.
    pub secret: String,
    pub id: String,
    pub user_id: String,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

/// How long a browser session lasts: idle (since its last request) and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrowserLimits {
    /// Ended after this long without a request.
    pub idle: std::time::Duration,
    /// Ended this long after sign-in, however active.
    pub absolute: std::time::Duration,
}

impl Default for BrowserLimits {
    fn default() -> Self {
        Self {
            idle: std::time::Duration::from_secs(30 * 60),
            absolute: std::time::Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// A browser session just started: its two secrets, each given to the browser once (the token
/// as an `HttpOnly` cookie, the CSRF token to the page) and stored only as verifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserSession {
    /// The `jadpo_session` cookie's value.
    pub token: String,
    /// The token a write must carry in `X-CSRF-Token`.
    pub csrf: String,
    pub id: String,
    pub user_id: String,
    pub expires_at: DateTime<Utc>,
}

/// A live session a presented token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSession {
    pub id: String,
    pub user_id: String,
    /// The verifier of a browser session's CSRF token.
    pub csrf_verifier: Option<String>,
    /// When it was last seen (a browser session's idle limit counts from it).
    pub last_seen_at: DateTime<Utc>,
    /// When it began: the sign-in (a browser session) or the token's issue (an API token).
    pub started_at: DateTime<Utc>,
}

/// Why a token could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The user id is empty, too long or holds control characters.
    #[error("user id {0:?} must be 1–255 characters without control characters")]
    BadUser(String),
    /// The application declares its users, and none has this id.
    #[error("no user has id {0:?}")]
    UnknownUser(String),
    /// The end is not after the start.
    #[error("a token must end after it is issued")]
    NoLifetime,
    /// The operating system gave no randomness.
    #[error("{0}")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `id` can name a user.
pub fn valid_user(id: &str) -> bool {
    (1..=255).contains(&id.len()) && !id.chars().any(char::is_control)
}

/// A new API token.
pub fn new_token() -> Result<String, TokenError> {
    random_secret(TOKEN_PREFIX).map_err(TokenError::Random)
}

/// Whether `presented` has an API token's shape at all (checked before any lookup).
pub fn is_token(presented: &str) -> bool {
    has_shape(presented, TOKEN_PREFIX)
}

/// Whether `presented` has the shape of a secret made by `random_secret(prefix)`.
pub fn has_shape(presented: &str, prefix: &str) -> bool {
    presented.starts_with(prefix)
        && presented.len() == prefix.len() + 64
        && presented[prefix.len()..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Two new secrets for a browser session: its token and its CSRF token.
pub fn new_browser_secrets() -> Result<(String, String), TokenError> {
    let token = random_secret(BROWSER_PREFIX).map_err(TokenError::Random)?;
    let csrf = random_secret(CSRF_PREFIX).map_err(TokenError::Random)?;
    Ok((token, csrf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_their_own_prefix_and_users_a_plain_id() {
        let t = new_token().unwrap_or_else(|e| panic!("{e}"));
        assert!(is_token(&t) && !is_token(&t[1..]) && !is_token("jadpo_sk_00"), "{t}");
        assert!(valid_user("alice") && valid_user("c-1@example.com"));
        assert!(!valid_user("") && !valid_user("a\nb") && !valid_user(&"x".repeat(256)));
    }
}
