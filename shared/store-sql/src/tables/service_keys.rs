//! `ServiceKeySql`: the slots of the service keys role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// The statements an adapter supplies for service keys.
    pub struct ServiceKeySql {
        /// One issued key, stored as its verifier; `scopes` separated by spaces.
        key_insert: KeyInsert(
            id: String,
            service: String,
            verifier: String,
            issued_at: DateTime<Utc>,
            expires_at: Option<DateTime<Utc>>,
            scopes: String,
        ),
        /// Returns `service, scopes` of a live key.
        key_find_live: KeyFindLive(verifier: String, now: DateTime<Utc>),
        /// Returns every key's `id, service, scopes, issued_at, expires_at, revoked_at`, newest
        /// first.
        keys_list: KeysList(),
        /// Returns key `id`'s row as `keys_list` does, locked where the dialect can.
        key_get: KeyGet(id: String),
        /// Revokes a key not yet revoked.
        key_revoke: KeyRevoke(id: String, now: DateTime<Utc>),
    }
}
