//! A webhook request verified before any database work: its signature checked over the raw bytes
//! in constant time, under each of the source's secrets that has not expired (so a secret can be
//! rotated with both live for a while), its signed timestamp within the tolerance either way, and
//! the key it is deduplicated by taken from signed material only: the signed id where the scheme
//! signs one (Standard Webhooks, Svix), the event's id inside the signed body (Stripe, Slack),
//! else the SHA-256 of the signed body. An unsigned header (GitHub's `X-GitHub-Delivery`,
//! Shopify's `X-Shopify-Webhook-Id`) is never the key: altering or stripping it cannot make one
//! event two.
//!
//! The presets follow each provider's documented scheme; the tests check them against the
//! vectors the providers publish (GitHub's, Slack's, Standard Webhooks') and, where a provider
//! publishes none, against vectors computed independently from its documentation.

use chrono::{DateTime, Duration, Utc};
use data_encoding::{BASE64, HEXLOWER_PERMISSIVE};
use ed25519_dalek::{Signature, VerifyingKey};
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use jadpo_application::{HmacScheme, WebhookScheme as Scheme};

/// One of a source's secrets, live until `expires_at` (for rotation: the old and the new both
/// verify until the old expires).
#[derive(Clone)]
pub struct Secret {
    key: Key,
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Clone)]
enum Key {
    Hmac(Vec<u8>),
    Ed25519(VerifyingKey),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.key {
            Key::Hmac(_) => "hmac",
            Key::Ed25519(_) => "ed25519",
        };
        f.debug_struct("Secret").field("key", &kind).field("expires_at", &self.expires_at).finish()
    }
}

impl Secret {
    /// Reads a secret as `scheme` writes it: Standard Webhooks' and Svix's `whsec_` (base64 of
    /// the HMAC key) or `whpk_` (base64 of an Ed25519 public key); for every other scheme the
    /// text itself is the HMAC key (Stripe's `whsec_…` included, as Stripe uses it).
    pub fn parse(
        scheme: &Scheme,
        text: &str,
        expires_at: Option<DateTime<Utc>>,
    ) -> Result<Self, VerifyError> {
        let standard = matches!(scheme, Scheme::StandardWebhooks | Scheme::Svix);
        let key = match (standard, text.strip_prefix("whsec_"), text.strip_prefix("whpk_")) {
            (true, Some(b64), _) => Key::Hmac(secret_base64(b64, "a whsec_ secret")?),
            (true, _, Some(b64)) => {
                let bytes = secret_base64(b64, "a whpk_ key")?;
                let bytes: [u8; 32] = bytes.try_into().map_err(|_| {
                    VerifyError::BadSecret("a whpk_ key is 32 bytes of base64".into())
                })?;
                let key = VerifyingKey::from_bytes(&bytes)
                    .map_err(|_| VerifyError::BadSecret("a whpk_ key is no Ed25519 key".into()))?;
                Key::Ed25519(key)
            }
            (true, None, None) => {
                return Err(VerifyError::BadSecret(
                    "a Standard Webhooks secret starts with whsec_ or whpk_".into(),
                ));
            }
            (false, ..) => Key::Hmac(text.as_bytes().to_vec()),
        };
        match &key {
            Key::Hmac(k) if k.is_empty() => Err(VerifyError::BadSecret("an empty secret".into())),
            _ => Ok(Self { key, expires_at }),
        }
    }
}

/// A source's secrets as its variable gives them: comma-separated, each `secret` or
/// `secret until <RFC 3339 time>` (an old secret kept live until a rotation is over).
pub fn read_secrets(scheme: &Scheme, text: &str) -> Result<Vec<Secret>, VerifyError> {
    let secrets: Vec<Secret> = text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| match item.split_once(" until ") {
            Some((secret, until)) => {
                let at = DateTime::parse_from_rfc3339(until.trim()).map_err(|_| {
                    VerifyError::BadSecret(format!("{until:?} is no RFC 3339 time"))
                })?;
                Secret::parse(scheme, secret.trim(), Some(at.with_timezone(&Utc)))
            }
            None => Secret::parse(scheme, item, None),
        })
        .collect::<Result<_, _>>()?;
    if secrets.is_empty() {
        return Err(VerifyError::BadSecret("no secret given".into()));
    }
    Ok(secrets)
}

/// A request as it arrived: its headers (names in any case) and its raw body.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl Request<'_> {
    /// The one value of header `name`; a header sent twice is refused rather than chosen from.
    fn header(&self, name: &str) -> Result<Option<&str>, VerifyError> {
        let mut found = self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let first = found.next().map(|(_, v)| v.as_str());
        if found.next().is_some() {
            return Err(VerifyError::Malformed(format!("header {name} was sent more than once")));
        }
        Ok(first)
    }

    fn required(&self, name: &str) -> Result<&str, VerifyError> {
        self.header(name)?.ok_or_else(|| VerifyError::MissingHeader(name.to_owned()))
    }
}

/// What a verified request proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The key it is deduplicated by, from signed material only.
    pub key: String,
    /// When the provider signed it, where the scheme signs a time.
    pub signed_at: Option<DateTime<Utc>>,
    /// The challenge to answer with, for Slack's URL verification handshake.
    pub challenge: Option<String>,
}

/// Why a request was refused (answered `400`, nothing written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the request has no {0} header")]
    MissingHeader(String),
    #[error("the request's signature headers are malformed: {0}")]
    Malformed(String),
    #[error("no signature matches any of the source's live secrets")]
    NoMatch,
    #[error("the request was signed at {signed_at}, more than {tolerance_s} s before now")]
    Stale { signed_at: DateTime<Utc>, tolerance_s: i64 },
    #[error("the request was signed at {signed_at}, more than {tolerance_s} s after now")]
    Future { signed_at: DateTime<Utc>, tolerance_s: i64 },
    #[error("the source has no live secret")]
    NoSecret,
    #[error("the signed body has no {0:?} field to key it by")]
    MissingKey(String),
    #[error("a source secret is unusable: {0}")]
    BadSecret(String),
}

/// Verifies `request` for `scheme` under `secrets` at `now`, a signed time allowed `tolerance`
/// either way.
pub fn verify(
    scheme: &Scheme,
    secrets: &[Secret],
    request: &Request<'_>,
    now: DateTime<Utc>,
    tolerance: Duration,
) -> Result<Verified, VerifyError> {
    let live: Vec<&Secret> =
        secrets.iter().filter(|s| s.expires_at.is_none_or(|t| t > now)).collect();
    if live.is_empty() {
        return Err(VerifyError::NoSecret);
    }
    let verified = match scheme {
        Scheme::Stripe => stripe(&live, request)?,
        Scheme::GitHub => body_hmac(&live, request, "x-hub-signature-256", "sha256=", false)?,
        Scheme::Slack => slack(&live, request)?,
        Scheme::StandardWebhooks => standard(&live, request, STANDARD)?,
        Scheme::Svix => standard(&live, request, SVIX)?,
        Scheme::Shopify => body_hmac(&live, request, "x-shopify-hmac-sha256", "", true)?,
        Scheme::Hmac(h) => generic(&live, request, h)?,
    };
    if let Some(signed_at) = verified.signed_at {
        let tolerance_s = tolerance.num_seconds();
        if now - signed_at > tolerance {
            return Err(VerifyError::Stale { signed_at, tolerance_s });
        }
        if signed_at - now > tolerance {
            return Err(VerifyError::Future { signed_at, tolerance_s });
        }
    }
    Ok(verified)
}

fn stripe(live: &[&Secret], request: &Request<'_>) -> Result<Verified, VerifyError> {
    let header = request.required("stripe-signature")?;
    let mut t = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v),
            Some(("v1", v)) => signatures.push(decode_hex(v)?),
            _ => {}
        }
    }
    let t = t.ok_or_else(|| VerifyError::Malformed("Stripe-Signature has no t=".into()))?;
    let signed_at = unix_seconds(t)?;
    let content = [t.as_bytes(), b".", request.body].concat();
    hmac_any(live, &content, &signatures)?;
    let key = json_field(request.body, "id")?;
    Ok(Verified { key, signed_at: Some(signed_at), challenge: None })
}

fn slack(live: &[&Secret], request: &Request<'_>) -> Result<Verified, VerifyError> {
    let t = request.required("x-slack-request-timestamp")?;
    let signature = request.required("x-slack-signature")?;
    let signature = signature
        .strip_prefix("v0=")
        .ok_or_else(|| VerifyError::Malformed("X-Slack-Signature does not start v0=".into()))?;
    let content = [b"v0:", t.as_bytes(), b":", request.body].concat();
    hmac_any(live, &content, &[decode_hex(signature)?])?;
    let json: Option<serde_json::Value> = serde_json::from_slice(request.body).ok();
    let field = |name: &str| json.as_ref().and_then(|j| j[name].as_str()).map(str::to_owned);
    let challenge = (field("type").as_deref() == Some("url_verification"))
        .then(|| field("challenge"))
        .flatten();
    let key = field("event_id").unwrap_or_else(|| digest_key(request.body));
    Ok(Verified { key, signed_at: Some(unix_seconds(t)?), challenge })
}

/// The header names of a Standard Webhooks scheme.
struct Headers {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const STANDARD: Headers =
    Headers { id: "webhook-id", timestamp: "webhook-timestamp", signature: "webhook-signature" };
const SVIX: Headers =
    Headers { id: "svix-id", timestamp: "svix-timestamp", signature: "svix-signature" };

fn standard(live: &[&Secret], request: &Request<'_>, h: Headers) -> Result<Verified, VerifyError> {
    let id = request.required(h.id)?;
    let t = request.required(h.timestamp)?;
    let header = request.required(h.signature)?;
    let content = [id.as_bytes(), b".", t.as_bytes(), b".", request.body].concat();
    let (mut symmetric, mut asymmetric) = (Vec::new(), Vec::new());
    for item in header.split_whitespace() {
        match item.split_once(',') {
            Some(("v1", b64)) => symmetric.push(decode_base64(b64, "a v1 signature")?),
            Some(("v1a", b64)) => asymmetric.push(decode_base64(b64, "a v1a signature")?),
            _ => {}
        }
    }
    let by_hmac = hmac_any(live, &content, &symmetric).is_ok();
    if !by_hmac && !ed25519_any(live, &content, &asymmetric) {
        return Err(VerifyError::NoMatch);
    }
    Ok(Verified { key: id.to_owned(), signed_at: Some(unix_seconds(t)?), challenge: None })
}

fn body_hmac(
    live: &[&Secret],
    request: &Request<'_>,
    header: &str,
    prefix: &str,
    base64: bool,
) -> Result<Verified, VerifyError> {
    let value = request.required(header)?;
    let encoded = value
        .strip_prefix(prefix)
        .ok_or_else(|| VerifyError::Malformed(format!("{header} does not start {prefix}")))?;
    let signature =
        if base64 { decode_base64(encoded, "the signature")? } else { decode_hex(encoded)? };
    hmac_any(live, request.body, &[signature])?;
    Ok(Verified { key: digest_key(request.body), signed_at: None, challenge: None })
}

fn generic(
    live: &[&Secret],
    request: &Request<'_>,
    h: &HmacScheme,
) -> Result<Verified, VerifyError> {
    let mut verified = body_hmac(live, request, &h.header, &h.prefix, h.base64)?;
    if let Some(field) = &h.key_field {
        verified.key = json_field(request.body, field)?;
    }
    Ok(verified)
}

/// `Ok` when one of `signatures` is the HMAC-SHA256 of `content` under one of the live HMAC
/// secrets; every comparison is constant-time (`Mac::verify_slice`).
fn hmac_any(live: &[&Secret], content: &[u8], signatures: &[Vec<u8>]) -> Result<(), VerifyError> {
    let mut matched = false;
    for secret in live {
        let Key::Hmac(key) = &secret.key else { continue };
        for signature in signatures {
            let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { continue };
            mac.update(content);
            matched |= mac.verify_slice(signature).is_ok();
        }
    }
    if matched { Ok(()) } else { Err(VerifyError::NoMatch) }
}

fn ed25519_any(live: &[&Secret], content: &[u8], signatures: &[Vec<u8>]) -> bool {
    live.iter().any(|secret| {
        let Key::Ed25519(key) = &secret.key else { return false };
        signatures
            .iter()
            .any(|s| Signature::from_slice(s).is_ok_and(|s| key.verify_strict(content, &s).is_ok()))
    })
}

fn digest_key(body: &[u8]) -> String {
    format!("sha256:{}", crate::digest::sha256_hex(body))
}

fn json_field(body: &[u8], field: &str) -> Result<String, VerifyError> {
    let json: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| VerifyError::MissingKey(field.to_owned()))?;
    match &json[field] {
        serde_json::Value::String(s) if !s.is_empty() => Ok(s.clone()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        _ => Err(VerifyError::MissingKey(field.to_owned())),
    }
}

fn unix_seconds(text: &str) -> Result<DateTime<Utc>, VerifyError> {
    let seconds: i64 = text
        .trim()
        .parse()
        .map_err(|_| VerifyError::Malformed(format!("timestamp {text:?} is not Unix seconds")))?;
    DateTime::from_timestamp(seconds, 0)
        .ok_or_else(|| VerifyError::Malformed(format!("timestamp {text:?} is out of range")))
}

fn decode_hex(text: &str) -> Result<Vec<u8>, VerifyError> {
    HEXLOWER_PERMISSIVE
        .decode(text.trim().as_bytes())
        .map_err(|_| VerifyError::Malformed("a signature is not hex".into()))
}

fn decode_base64(text: &str, what: &str) -> Result<Vec<u8>, VerifyError> {
    BASE64
        .decode(text.trim().as_bytes())
        .map_err(|_| VerifyError::Malformed(format!("{what} is not base64")))
}

fn secret_base64(text: &str, what: &str) -> Result<Vec<u8>, VerifyError> {
    BASE64
        .decode(text.as_bytes())
        .map_err(|_| VerifyError::BadSecret(format!("{what} is not base64")))
}

#[cfg(test)]
mod tests;
