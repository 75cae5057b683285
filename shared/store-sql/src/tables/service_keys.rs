//! `ServiceKeySql`: the slots of the service keys role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for service keys.
    pub struct ServiceKeySql {
        /// One issued key, stored as its verifier; `scopes` separated by spaces.
        key_insert(id, service, verifier, issued_at, expires_at, scopes),
        /// Returns `service, scopes` of a live key.
        key_find_live(verifier, now),
        /// Returns every key's `id, service, scopes, issued_at, expires_at, revoked_at`, newest
        /// first.
        keys_list(),
        /// Returns key `id`'s row as `keys_list` does, locked where the dialect can.
        key_get(id),
        /// Revokes a key not yet revoked.
        key_revoke(id, now),
    }
}
