//! `ServiceKeySql`: the slots of the service keys role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for service keys.
    pub struct ServiceKeySql {
        /// One issued key, stored as its verifier.
        key_insert(id, service, verifier, issued_at, expires_at),
        /// Returns `service` of a live key.
        key_find_live(verifier, now),
    }
}
