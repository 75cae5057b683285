//! The service-key role: issue a key (its verifier stored), verify a presented one, and the
//! operator's view: list, revoke.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::model::principal::EntityRecord;
use crate::model::service_key::{IssuedKey, KeyError, KeyInfo, Scopes, VerifiedKey};
use crate::transaction::Transaction;

/// The role that keeps service keys.
#[async_trait]
pub trait ServiceKeyStore: Send + Sync {
    /// Issues a key for `service` inside `tx`, valid until `expires_at`, allowed `scopes`.
    async fn service_key_issue(
        &self,
        tx: &mut dyn Transaction,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        scopes: &Scopes,
        clock: &dyn Clock,
    ) -> Result<IssuedKey, KeyError>;

    /// The service a presented key authenticates and what it may do, or `None` (unknown,
    /// expired or revoked, or — with `services` — its service's record is gone). One statement,
    /// the service's record read with the key.
    async fn service_key_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
        services: Option<EntityRecord<'_>>,
    ) -> Result<Option<VerifiedKey>, StoreError>;

    /// Every key, newest first, without secrets or verifiers.
    async fn service_keys_list(&self) -> Result<Vec<KeyInfo>, StoreError>;

    /// Key `id` inside `tx`, locked where the dialect can.
    async fn service_key_get(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<Option<KeyInfo>, StoreError>;

    /// Revokes key `id` at `now` unless it is revoked already; whether it was.
    async fn service_key_revoke(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
}
