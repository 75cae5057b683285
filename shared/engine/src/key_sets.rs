//! The OpenID Connect issuers' key sets a process fetched, kept per provider with when each was
//! fetched (the OpenID Connect sign-in decides when to use one and when to fetch again).
//!
//! Why a module of its own: the engine's context holds one, and this leaf keeps the context from
//! depending on the sign-in use cases.

use chrono::{DateTime, Utc};
use jsonwebtoken::jwk::JwkSet;

/// The key sets this process fetched, by provider, with when each was fetched.
#[derive(Debug, Default)]
pub struct KeySets {
    fetched: std::sync::Mutex<std::collections::HashMap<String, (JwkSet, DateTime<Utc>)>>,
}

impl KeySets {
    pub(crate) fn kept(&self, provider: &str) -> Option<(JwkSet, DateTime<Utc>)> {
        let fetched = self.fetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        fetched.get(provider).cloned()
    }

    pub(crate) fn keep(&self, provider: &str, keys: JwkSet, at: DateTime<Utc>) {
        let mut fetched = self.fetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        fetched.insert(provider.to_owned(), (keys, at));
    }
}
