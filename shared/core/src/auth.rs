//! Service keys: how callers of the commit function are authenticated.
//!
//! A key is 32 random bytes shown once, as `jadpo_sk_<hex>`, when issued. The store keeps only
//! its verifier, the SHA-256 of the whole key: a key has 256 bits of entropy, so a fast hash is
//! a sound verifier (no dictionary to guess from), and lookup by verifier needs no secret
//! comparison in the application. Expired and revoked keys authenticate nobody.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::id::new_id;
use crate::sql::SqlValue;
use crate::transaction::TransactionalStore;

const PREFIX: &str = "jadpo_sk_";

/// A newly issued key: the secret, shown once, and its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedKey {
    /// The key to give the caller; never stored.
    pub secret: String,
    /// The key's id.
    pub id: String,
    /// The service it authenticates.
    pub service: String,
    /// When it stops working, if ever.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Why a key could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The service name is empty or unusable.
    #[error("service name {0:?} must be 1–64 characters of letters, digits, '-', '_' or '.'")]
    BadService(String),
    /// The operating system gave no randomness.
    #[error("no randomness available: {0}")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The verifier stored for `secret`.
pub fn verifier(secret: &str) -> String {
    Sha256::digest(secret.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The statements an adapter supplies for service keys.
#[derive(Debug)]
pub struct AuthSql {
    /// `(id, service, verifier, issued_at, expires_at)`.
    pub key_insert: &'static str,
    /// `(verifier, now)` → `service` of a live key.
    pub key_find_live: &'static str,
}

/// An adapter that speaks service keys through its own [`AuthSql`].
pub trait AuthDialect: TransactionalStore {
    /// The adapter's statements.
    fn auth_sql(&self) -> &'static AuthSql;
}

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

fn valid_service(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[async_trait]
impl<S: AuthDialect> ServiceKeyStore for S {
    async fn service_key_issue(
        &self,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        clock: &dyn Clock,
    ) -> Result<IssuedKey, KeyError> {
        if !valid_service(service) {
            return Err(KeyError::BadService(service.to_owned()));
        }
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
        let secret =
            format!("{PREFIX}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let id = new_id(clock).to_string();
        let params = [
            id.as_str().into(),
            service.into(),
            verifier(&secret).into(),
            clock.now().into(),
            expires_at.map_or(SqlValue::Null, SqlValue::from),
        ];
        let mut tx = self.begin().await?;
        tx.execute(self.auth_sql().key_insert, &params).await?;
        tx.commit().await?;
        Ok(IssuedKey { secret, id, service: service.to_owned(), expires_at })
    }

    async fn service_key_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        if !presented.starts_with(PREFIX) || presented.len() != PREFIX.len() + 64 {
            return Ok(None);
        }
        let mut tx = self.begin().await?;
        let row = tx
            .query_opt(self.auth_sql().key_find_live, &[verifier(presented).into(), now.into()])
            .await?;
        tx.rollback().await?;
        row.map(|r| r.get_str("service").map(str::to_owned)).transpose()
    }
}
