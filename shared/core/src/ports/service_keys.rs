//! The service-key role: issue a key (its verifier stored), verify a presented one.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::model::service_key::IssuedKey;
use crate::model::service_key::KeyError;

/// The role that keeps service keys.
#[async_trait]
pub trait ServiceKeyStore: Send + Sync {
    /// Issues a key for `service`, valid until `expires_at`.
    async fn service_key_issue(
        &self,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        clock: &dyn Clock,
    ) -> Result<IssuedKey, KeyError>;

    /// The service a presented key authenticates, or `None` (unknown, expired or revoked).
    async fn service_key_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError>;
}
