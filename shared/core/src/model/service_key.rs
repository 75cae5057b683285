//! Service keys: how callers of the commit function are authenticated.
//!
//! A key is 32 random bytes shown once, as `jadpo_sk_<hex>`, when issued. The store keeps only
//! its verifier, the SHA-256 of the whole key: a key has 256 bits of entropy, so a fast hash is
//! a sound verifier (no dictionary to guess from), and lookup by verifier needs no secret
//! comparison in the application. Expired and revoked keys authenticate nobody.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::error::StoreError;

/// What every service key starts with.
pub const PREFIX: &str = "jadpo_sk_";

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

/// Whether `name` can name a service: 1–64 letters, digits, `-`, `_` or `.`.
pub fn valid_service(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A new secret: [`PREFIX`] and 32 random bytes in hex.
pub fn new_secret() -> Result<String, KeyError> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
    Ok(format!("{PREFIX}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// Whether `presented` has a key's shape at all (checked before any lookup).
pub fn well_formed(presented: &str) -> bool {
    presented.starts_with(PREFIX) && presented.len() == PREFIX.len() + 64
}
