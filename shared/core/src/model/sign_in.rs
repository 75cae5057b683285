//! Sign-in by email: a magic link and a one-time code, sent together, either of which signs a
//! person in once.
//!
//! Why it is shaped this way:
//! * The table keeps one row per address **by its digest** (`jadpo_sign_in_requests`), so the
//!   limits (sends per address per hour, wrong codes before lock-out) hold whatever the address's
//!   case or spacing, and the table holds no address.
//! * The link and code are made by the mail's delivery, not by the request: the request only
//!   counts the send and writes a new nonce; the delivery makes a fresh link and code, stores their
//!   verifiers on the row (if its nonce is still the latest) and mails them in the same
//!   transaction. So neither secret is ever written anywhere, the outbox included, and a retried
//!   delivery mails a fresh pair whose verifiers replace the old.
//! * A link is 256 random bits, so its SHA-256 is a sound verifier. A code is short enough to
//!   type (8 characters, 40 bits), so its verifier is salted with the request's nonce and it is
//!   locked out after [`SignInLimits::wrong_codes`] wrong tries; it lives minutes.

use std::time::Duration;

use chrono::{DateTime, Utc};

use sha2::{Digest, Sha256};

use crate::error::StoreError;
use crate::model::service_key::{random_secret, verifier};

/// What every magic link's token starts with.
pub(crate) const LINK_PREFIX: &str = "jadpo_ml_";
/// The event a sign-in request emits; its delivery mails the link and code.
pub const MAIL_EVENT: &str = "jadpo.sign_in.requested";
/// The subscriber that mails them (in the users' store, through the declared mail connection).
pub const MAIL_SUBSCRIBER: &str = "jadpo_sign_in_mail";
/// The event registering a passkey emits; its delivery tells the user by mail.
pub const PASSKEY_ADDED_EVENT: &str = "jadpo.passkey.added";
/// The subscriber that mails it (beside the sign-in mail's).
pub const PASSKEY_ADDED_SUBSCRIBER: &str = "jadpo_passkey_added_mail";
/// The letters a code is made of: no `0/O`, `1/I/L`, `U` (Crockford's base 32).
const CODE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// A code's length.
pub(crate) const CODE_LEN: usize = 8;

/// The limits a sign-in request and a code are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInLimits {
    /// Mails per address per hour; the next request in the hour is refused (`429`).
    pub sends_per_hour: u32,
    /// Wrong codes before the request is locked (its link and code stop working), from every
    /// source together: more than one source's [`SignInLimits::wrong_codes_per_source`], so no
    /// one source can lock a person out.
    pub wrong_codes: u32,
    /// How long a link and code work after they are mailed.
    pub lifetime: Duration,
    /// Mails one source address may ask for per hour, whatever the addresses.
    pub sends_per_source: u32,
    /// Wrong codes one source address may send per hour, whatever the addresses; past them its
    /// tries are refused (`429`) and count against no request.
    pub wrong_codes_per_source: u32,
    /// Mails per hour overall: past it every request is refused (`429`) until the hour moves on.
    pub sends_overall: u32,
}

impl Default for SignInLimits {
    fn default() -> Self {
        Self {
            sends_per_hour: 5,
            wrong_codes: 20,
            lifetime: Duration::from_secs(15 * 60),
            sends_per_source: 20,
            wrong_codes_per_source: 5,
            sends_overall: 1_000,
        }
    }
}

/// One source address's counts in its current hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceWindow {
    /// When its window started.
    pub started_at: DateTime<Utc>,
    /// The mails it asked for in the window.
    pub sends: u32,
    /// The wrong codes it sent in the window.
    pub wrong_codes: u32,
}

impl SourceWindow {
    /// The window as it stands at `now`: one older than [`SEND_WINDOW`] starts again, empty.
    pub fn at(self, now: DateTime<Utc>) -> Self {
        let window = chrono::Duration::from_std(SEND_WINDOW).unwrap_or(chrono::Duration::MAX);
        if self.started_at + window <= now {
            Self { started_at: now, sends: 0, wrong_codes: 0 }
        } else {
            self
        }
    }
}

/// How long the send count of an address is kept: one hour.
pub const SEND_WINDOW: Duration = Duration::from_secs(3600);

/// An email address, trimmed and lower-cased, with the digest its row is kept by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailAddress {
    address: String,
}

impl EmailAddress {
    /// Parses `text`: one `@` with something on both sides, a dot in the domain, at most 254
    /// characters, no spaces or control characters.
    pub fn parse(text: &str) -> Result<Self, SignInError> {
        let address = text.trim().to_lowercase();
        let bad = || SignInError::BadAddress(text.chars().take(64).collect());
        let (local, domain) = address.split_once('@').ok_or_else(bad)?;
        let fine = (3..=254).contains(&address.len())
            && !local.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains('@')
            && !address.chars().any(|c| c.is_whitespace() || c.is_control());
        if !fine {
            return Err(bad());
        }
        Ok(Self { address })
    }

    /// The address as mailed and as matched against the user entity's email.
    pub fn as_str(&self) -> &str {
        &self.address
    }

    /// The digest its row is kept by.
    pub fn digest(&self) -> String {
        verifier(&format!("jadpo-sign-in:{}", self.address))
    }
}

/// A new magic link token.
pub fn new_link() -> Result<String, SignInError> {
    random_secret(LINK_PREFIX).map_err(SignInError::Random)
}

/// Whether `presented` has a link token's shape (checked before any lookup).
pub fn is_link(presented: &str) -> bool {
    presented.starts_with(LINK_PREFIX) && presented.len() == LINK_PREFIX.len() + 64
}

/// A new one-time code: [`CODE_LEN`] characters of Crockford's base 32.
pub fn new_code() -> Result<String, SignInError> {
    let mut bytes = [0_u8; CODE_LEN];
    getrandom::fill(&mut bytes).map_err(|e| SignInError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| char::from(CODE_ALPHABET[usize::from(b & 31)])).collect())
}

/// A code as typed, normalized: upper-cased, spaces and dashes dropped, `O`→`0`, `I`/`L`→`1`.
pub(crate) fn normalize_code(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            other => other,
        })
        .collect()
}

/// The verifier of `code` for the request with `nonce`: salted, so one table of digests does not
/// serve every row.
pub fn code_verifier(nonce: &str, code: &str) -> String {
    let mut hash = Sha256::new();
    for part in [b"jadpo-code:".as_slice(), nonce.as_bytes(), b":", normalize_code(code).as_bytes()]
    {
        hash.update(part);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A request counted: the nonce its mail must carry to arm it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    /// The request's nonce (random; the code's salt).
    pub nonce: String,
}

/// What redeeming a link or code found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// It was the live link or code: it is used now and works no more.
    SignedIn,
    /// Wrong: `left` tries remain before the request locks.
    Wrong { left: u32 },
    /// No live link or code for the address: never sent, used, expired or locked.
    NotLive,
}

/// Why an external token (an OpenID Connect ID token) was refused (`401`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    #[error("the token is not a signed JWT this runtime can read")]
    Malformed,
    #[error("the token's algorithm is not accepted (asymmetric signatures only)")]
    Algorithm,
    #[error("the token was signed by a key the issuer does not publish")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token was issued by another issuer")]
    WrongIssuer,
    #[error("the token was issued for another audience")]
    WrongAudience,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error(
        "the token carries no nonce this server issued to this browser: ask POST \
         /sign-in/oidc/{{provider}}/nonce first and pass its nonce to the provider"
    )]
    Nonce,
    #[error("the token was already used to sign in: sign in with the provider again")]
    Replayed,
}

/// Why a sign-in step was refused.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Not an email address.
    #[error("{0:?} is not an email address")]
    BadAddress(String),
    /// Too many mails to this address this hour.
    #[error("too many sign-in mails to this address; try again within the hour")]
    TooMany,
    /// Too many mails, or wrong codes, from this source address this hour.
    #[error("too many sign-in attempts from your network address; try again within the hour")]
    TooManyFromSource,
    /// Too many sign-in mails overall this hour.
    #[error("too many sign-in mails are being sent; try again within the hour")]
    TooManyOverall,
    /// The operating system gave no randomness.
    #[error("no randomness available: {0}")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalized_and_checked() {
        let a = EmailAddress::parse("  Alice@Example.COM ").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.as_str(), "alice@example.com");
        let b = EmailAddress::parse("alice@example.com").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.digest(), b.digest());
        assert_ne!(a.digest(), verifier("alice@example.com"), "the digest is domain-separated");
        for bad in ["", "alice", "@example.com", "alice@", "alice@example", "a b@c.d", "a@b@c.d"] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad:?}");
        }
        assert!(EmailAddress::parse(&format!("{}@example.com", "a".repeat(250))).is_err());
    }

    #[test]
    fn codes_are_typeable_and_salted() {
        let code = new_code().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(code.len(), CODE_LEN);
        assert!(code.bytes().all(|b| CODE_ALPHABET.contains(&b)), "{code}");
        let typed = format!(" {}-{} ", &code[..4].to_lowercase(), &code[4..]);
        assert_eq!(code_verifier("n1", &typed), code_verifier("n1", &code));
        assert_ne!(code_verifier("n1", &code), code_verifier("n2", &code), "salted by nonce");
        assert_eq!(normalize_code("oil-1"), "0111");
        let link = new_link().unwrap_or_else(|e| panic!("{e}"));
        assert!(is_link(&link) && !is_link(&link[1..]) && !is_link(&code));
    }
}
