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

/// One thing a key may do.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Everything (`*`): what keys issued before scopes existed keep.
    All,
    /// Every action (`actions`).
    Actions,
    /// One action (`action:<name>`).
    Action(String),
    /// The workflow run routes (`runs`).
    Runs,
    /// The Session routes (`sessions`).
    Sessions,
    /// The file routes (`files`): uploads, and downloads of files its records hold.
    Files,
    /// What an operator's monitoring reads (`operations`): `/readyz`'s per-store details.
    Operations,
}

impl Scope {
    /// Parses one scope as written on the command line and stored.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let bad = || KeyError::BadScope(text.to_owned());
        Ok(match text {
            "*" => Self::All,
            "actions" => Self::Actions,
            "runs" => Self::Runs,
            "sessions" => Self::Sessions,
            "files" => Self::Files,
            "operations" => Self::Operations,
            _ => {
                let name = text.strip_prefix("action:").ok_or_else(bad)?;
                let ok = !name.is_empty()
                    && name.len() <= 128
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
                if !ok {
                    return Err(bad());
                }
                Self::Action(name.to_owned())
            }
        })
    }

    /// The scope as written.
    pub fn as_text(&self) -> String {
        match self {
            Self::All => "*".to_owned(),
            Self::Actions => "actions".to_owned(),
            Self::Action(name) => format!("action:{name}"),
            Self::Runs => "runs".to_owned(),
            Self::Sessions => "sessions".to_owned(),
            Self::Files => "files".to_owned(),
            Self::Operations => "operations".to_owned(),
        }
    }
}

/// What a key may do: a non-empty set of [`Scope`]s, stored as their texts separated by spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scopes(Vec<Scope>);

impl Scopes {
    /// Scopes from their texts, sorted and without repeats; at least one.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Self, KeyError> {
        let mut scopes =
            texts.iter().map(|t| Scope::parse(t.as_ref().trim())).collect::<Result<Vec<_>, _>>()?;
        scopes.sort();
        scopes.dedup();
        if scopes.is_empty() { Err(KeyError::NoScope) } else { Ok(Self(scopes)) }
    }

    /// Every scope (`*`).
    pub fn all() -> Self {
        Self(vec![Scope::All])
    }

    /// Scopes as stored.
    pub fn from_stored(text: &str) -> Result<Self, KeyError> {
        Self::parse(&text.split_whitespace().collect::<Vec<_>>())
    }

    /// The stored form: the texts separated by spaces.
    pub fn to_stored(&self) -> String {
        self.0.iter().map(Scope::as_text).collect::<Vec<_>>().join(" ")
    }

    /// The scopes.
    pub fn iter(&self) -> impl Iterator<Item = &Scope> {
        self.0.iter()
    }

    /// Whether the key may run action `name`.
    pub fn allow_action(&self, name: &str) -> bool {
        self.0.iter().any(|s| match s {
            Scope::All | Scope::Actions => true,
            Scope::Action(n) => n == name,
            Scope::Runs | Scope::Sessions | Scope::Files | Scope::Operations => false,
        })
    }

    /// Whether the key may use `scope`'s routes (`Runs`, `Sessions`, `Files` or `Operations`).
    pub fn allow(&self, scope: &Scope) -> bool {
        self.0.iter().any(|s| s == &Scope::All || s == scope)
    }
}

impl std::fmt::Display for Scopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_stored())
    }
}

/// A key that authenticated: its service and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedKey {
    /// The service it authenticates.
    pub service: String,
    /// What it may do.
    pub scopes: Scopes,
}

/// A key as operators list it: never its secret nor its verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub id: String,
    pub service: String,
    pub scopes: Scopes,
    pub issued_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// When an operator revoked it; a revoked key authenticates nobody.
    pub revoked_at: Option<DateTime<Utc>>,
}

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
    /// What it may do.
    pub scopes: Scopes,
}

/// Why a key could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The service name is empty or unusable.
    #[error("service name {0:?} must be 1–64 characters of letters, digits, '-', '_' or '.'")]
    BadService(String),
    /// A scope is not one Jadpo knows.
    #[error("scope {0:?} is not one of '*', 'actions', 'action:<name>', 'runs' or 'sessions'")]
    BadScope(String),
    /// No scope was given: a key must say what it may do.
    #[error(
        "a key needs at least one scope (--scope action:<name>, actions, runs, sessions or '*')"
    )]
    NoScope,
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
    random_secret(PREFIX).map_err(KeyError::Random)
}

/// `prefix` and 32 random bytes in hex: 256 bits, so a fast digest is a sound verifier.
pub fn random_secret(prefix: &str) -> Result<String, String> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness available: {e}"))?;
    Ok(format!("{prefix}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// Whether `presented` has a key's shape at all (checked before any lookup).
pub fn well_formed(presented: &str) -> bool {
    presented.starts_with(PREFIX) && presented.len() == PREFIX.len() + 64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_store_and_decide() {
        let s = Scopes::parse(&["runs", "action:place_order", "runs"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.to_stored(), "action:place_order runs");
        assert_eq!(Scopes::from_stored(&s.to_stored()).ok(), Some(s.clone()));
        assert!(s.allow_action("place_order"));
        assert!(!s.allow_action("refund"));
        assert!(s.allow(&Scope::Runs));
        assert!(!s.allow(&Scope::Sessions));
        let all = Scopes::all();
        assert!(all.allow_action("refund") && all.allow(&Scope::Sessions));
        let actions = Scopes::parse(&["actions"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(actions.allow_action("refund") && !actions.allow(&Scope::Runs));
    }

    #[test]
    fn unknown_or_empty_scopes_are_refused() {
        for bad in ["root", "action:", "action:two words", "Runs", ""] {
            assert!(matches!(Scopes::parse(&[bad]), Err(KeyError::BadScope(_))), "{bad:?}");
        }
        assert!(matches!(Scopes::parse::<&str>(&[]), Err(KeyError::NoScope)));
    }
}
