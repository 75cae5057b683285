//! Sign-in with an external token: an OpenID Connect ID token from a provider the application
//! declares ([`OidcProvider`]: issuer, audience, and the connection that serves its key set).
//!
//! The token's signature is checked against the issuer's published keys, fetched through the
//! declared connection and kept for [`KEYS_KEPT`] ([`KeySets`]): a token signed with a key id the
//! kept set lacks (the issuer rotated) fetches the set again, at most once per [`REFETCH_EVERY`],
//! so a flood of forged key ids cannot make this process hammer the issuer. Then its issuer,
//! audience (and, when the audience names several clients, the authorized party `azp`, which must
//! be this application's client id, as it must whenever it is present), expiry and start against
//! the runtime's clock.
//!
//! A token is accepted once, and only by the browser it was asked for: before going to the
//! provider, the browser asks this server for a nonce ([`new_nonce`]); the server answers the
//! nonce (the SHA-256 of a secret) and sets the secret in an `HttpOnly` cookie that lives
//! [`NONCE_TTL`]. The provider puts the nonce in the token; the sign-in accepts the token only
//! with a cookie whose secret hashes to it, issued less than [`NONCE_TTL`] ago, so a token copied
//! elsewhere (a log, a proxy, a page's script) signs in nobody. The token's SHA-256 is then
//! recorded until it expires (`jadpo_used_tokens`), in the transaction that starts the session:
//! the same token a second time is refused.
//! Only asymmetric algorithms are accepted, so a token cannot be signed with a public key as an
//! HMAC secret. The identity (issuer, subject) signs in the user it was linked to at its first
//! sign-in (`jadpo_sign_in_links`); a first sign-in is decided by the application's policy: link
//! to the user holding the token's verified email, create one, or refuse.

use chrono::{DateTime, Utc};
use jadpo_application::{FirstSignIn, OidcProvider, UserEntity};
use jadpo_core::Transaction;
use jadpo_core::model::sign_in::{EmailAddress, SignInError, TokenRefusal};
use jadpo_core::model::user_session::BrowserSession;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use serde_json::Value;

use crate::context::Engine;
pub use crate::key_sets::KeySets;
use crate::sign_in::{SignInFlowError, create_user, find_by_email, start_session};

/// How much a token's clock may differ from ours.
const LEEWAY_S: i64 = 60;
/// How long a fetched key set is used before it is fetched again.
pub const KEYS_KEPT: chrono::TimeDelta = chrono::TimeDelta::hours(1);
/// The shortest time between two fetches of one issuer's keys for an unknown key id.
pub const REFETCH_EVERY: chrono::TimeDelta = chrono::TimeDelta::seconds(30);
/// How long a nonce (and the cookie holding its secret) may be used to sign in.
pub const NONCE_TTL: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// A new nonce issued at `now`: the secret the browser's cookie keeps (the time it was issued
/// and 32 random bytes), and the nonce the provider is given (the secret's SHA-256).
pub fn new_nonce(now: DateTime<Utc>) -> Result<(String, String), SignInFlowError> {
    let secret = jadpo_core::model::service_key::random_secret(&format!("{}.", now.timestamp()))
        .map_err(|e| SignInFlowError::Request(SignInError::Random(e)))?;
    let nonce = jadpo_core::model::service_key::verifier(&secret);
    Ok((secret, nonce))
}

/// Whether `claimed` (the token's nonce) is the one issued with `secret` (the browser's cookie),
/// less than [`NONCE_TTL`] before `now`.
fn nonce_ok(secret: Option<&str>, claimed: Option<&str>, now: DateTime<Utc>) -> bool {
    let (Some(secret), Some(claimed)) = (secret, claimed) else { return false };
    let issued = secret.split_once('.').and_then(|(t, _)| t.parse::<i64>().ok());
    let fresh = issued
        .and_then(|t| DateTime::from_timestamp(t, 0))
        .is_some_and(|at| at <= now && now - at < NONCE_TTL);
    let hashed = jadpo_core::model::service_key::verifier(secret);
    use subtle::ConstantTimeEq;
    // `ct_eq` compares lengths first, then every byte, in time that does not depend on where
    // they differ.
    fresh && bool::from(hashed.as_bytes().ct_eq(claimed.as_bytes()))
}

/// Who a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalIdentity {
    pub issuer: String,
    pub subject: String,
    /// The token's email, only when the issuer says it is verified.
    pub verified_email: Option<EmailAddress>,
    /// The nonce the token carries, if any.
    pub nonce: Option<String>,
    /// When the token expires (Unix seconds, with the leeway a clock may differ by).
    pub expires_at: i64,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    /// One client id, or several.
    aud: Value,
    /// The party the token was issued to, when the audience names several.
    #[serde(default)]
    azp: Option<String>,
    exp: i64,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    email: Option<String>,
    /// A boolean, or (some issuers) the string `"true"`.
    #[serde(default)]
    email_verified: Option<Value>,
    #[serde(default)]
    nonce: Option<String>,
}

const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Verifies `token` from `provider` against its key set `keys` at `now` (Unix seconds).
pub fn verify(
    provider: &OidcProvider,
    keys: &JwkSet,
    token: &str,
    now: i64,
) -> Result<ExternalIdentity, TokenRefusal> {
    let header = decode_header(token).map_err(|_| TokenRefusal::Malformed)?;
    if !ACCEPTED.contains(&header.alg) {
        return Err(TokenRefusal::Algorithm);
    }
    let jwk = match &header.kid {
        Some(kid) => keys.find(kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or(TokenRefusal::UnknownKey)?;
    let key = DecodingKey::from_jwk(jwk).map_err(|_| TokenRefusal::UnknownKey)?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[&provider.issuer]);
    validation.set_audience(&[&provider.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    // Time is checked below against the runtime's clock, not the machine's.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    let claims = decode::<Claims>(token, &key, &validation).map_err(|e| refusal(&e))?.claims;
    if claims.exp + LEEWAY_S <= now {
        return Err(TokenRefusal::Expired);
    }
    if claims.nbf.is_some_and(|nbf| nbf - LEEWAY_S > now) {
        return Err(TokenRefusal::NotYetValid);
    }
    let several = claims.aud.as_array().is_some_and(|a| a.len() > 1);
    let party_ok = match &claims.azp {
        Some(azp) => *azp == provider.audience,
        None => !several,
    };
    if !party_ok {
        return Err(TokenRefusal::WrongAudience);
    }
    let verified = claims.email_verified.as_ref().is_some_and(|v| v == true || v == "true");
    let verified_email =
        claims.email.filter(|_| verified).and_then(|e| EmailAddress::parse(&e).ok());
    Ok(ExternalIdentity {
        issuer: provider.issuer.clone(),
        subject: claims.sub,
        verified_email,
        nonce: claims.nonce,
        expires_at: claims.exp.saturating_add(LEEWAY_S),
    })
}

fn refusal(e: &jsonwebtoken::errors::Error) -> TokenRefusal {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::InvalidSignature => TokenRefusal::BadSignature,
        K::InvalidIssuer => TokenRefusal::WrongIssuer,
        K::InvalidAudience => TokenRefusal::WrongAudience,
        K::InvalidAlgorithm | K::InvalidAlgorithmName => TokenRefusal::Algorithm,
        K::InvalidEcdsaKey | K::InvalidRsaKey(_) | K::InvalidKeyFormat => TokenRefusal::UnknownKey,
        _ => TokenRefusal::Malformed,
    }
}

/// A nonce for a sign-in with provider `name` ([`new_nonce`]): `(secret, nonce)`, the secret
/// for the browser's cookie. Refused for a provider the application does not declare.
pub fn nonce_for(engine: &Engine, name: &str) -> Result<(String, String), SignInFlowError> {
    let users = engine.app.users().ok_or(SignInFlowError::NotOffered)?;
    users.provider(name).ok_or(SignInFlowError::NotOffered)?;
    new_nonce(engine.clock.now())
}

/// Signs in with `token` from the declared provider `name`, presented with `nonce_secret` (the
/// browser's nonce cookie): verifies it and its nonce, records it as used, finds the user its
/// identity is linked to (or links one, as the application's policy says) and starts a browser
/// session, in one transaction of the users' store. A token used before is refused, and
/// nothing changes.
pub async fn sign_in_with_token(
    engine: &Engine,
    name: &str,
    token: &str,
    nonce_secret: Option<&str>,
) -> Result<BrowserSession, SignInFlowError> {
    let users = engine.app.users().ok_or(SignInFlowError::NotOffered)?;
    let provider = users.provider(name).ok_or(SignInFlowError::NotOffered)?;
    let now = engine.clock.now();
    let identity = verified(engine, name, provider, token, now).await?;
    if !nonce_ok(nonce_secret, identity.nonce.as_deref(), now) {
        return Err(TokenRefusal::Nonce.into());
    }
    let store = engine.store(&users.store)?;
    let mut tx = store.begin().await?;
    let until = DateTime::from_timestamp(identity.expires_at, 0).unwrap_or(now + NONCE_TTL);
    let digest = jadpo_core::model::service_key::verifier(token);
    let user = match store.sign_in_token_spend(tx.as_mut(), &digest, until).await {
        Ok(true) => linked_user(engine, store.as_ref(), tx.as_mut(), users, &identity).await,
        Ok(false) => Err(TokenRefusal::Replayed.into()),
        Err(e) => Err(e.into()),
    };
    start_session(engine, store.as_ref(), tx, user).await
}

/// `token` verified against `provider`'s kept key set, fetched when none is kept or it is older
/// than [`KEYS_KEPT`], and fetched again for a key id it lacks when the last fetch is older than
/// [`REFETCH_EVERY`].
async fn verified(
    engine: &Engine,
    name: &str,
    provider: &OidcProvider,
    token: &str,
    now: DateTime<Utc>,
) -> Result<ExternalIdentity, SignInFlowError> {
    let kept = engine.key_sets.kept(name).filter(|(_, at)| now - *at < KEYS_KEPT);
    let (keys, fetched_at) = match kept {
        Some(kept) => kept,
        None => (fetch_keys(engine, name, provider, now).await?, now),
    };
    match verify(provider, &keys, token, now.timestamp()) {
        Err(TokenRefusal::UnknownKey) if now - fetched_at >= REFETCH_EVERY => {
            let keys = fetch_keys(engine, name, provider, now).await?;
            Ok(verify(provider, &keys, token, now.timestamp())?)
        }
        other => Ok(other?),
    }
}

/// Fetches `provider`'s key set through its connection and keeps it as fetched at `now`.
async fn fetch_keys(
    engine: &Engine,
    name: &str,
    provider: &OidcProvider,
    now: DateTime<Utc>,
) -> Result<JwkSet, SignInFlowError> {
    let answer = engine
        .connections
        .get(&provider.keys_connection, "")
        .await
        .map_err(|e| SignInFlowError::KeysUnavailable(e.to_string()))?;
    let keys: JwkSet = serde_json::from_value(answer.body)
        .map_err(|e| SignInFlowError::KeysUnavailable(format!("not a key set: {e}")))?;
    engine.key_sets.keep(name, keys.clone(), now);
    Ok(keys)
}

/// The user `identity` is linked to; at its first sign-in, the one the policy links it to.
async fn linked_user(
    engine: &Engine,
    store: &dyn jadpo_core::ports::SignInStore,
    tx: &mut dyn Transaction,
    users: &UserEntity,
    identity: &ExternalIdentity,
) -> Result<String, SignInFlowError> {
    let now = engine.clock.now();
    let (issuer, subject) = (identity.issuer.as_str(), identity.subject.as_str());
    if let Some(user) = store.sign_in_link_find(tx, issuer, subject, now).await? {
        return Ok(user);
    }
    if users.first_sign_in == FirstSignIn::Refuse {
        return Err(SignInFlowError::NoAccount);
    }
    let email = identity.verified_email.as_ref().ok_or(SignInFlowError::NoAccount)?;
    let user = match find_by_email(tx, users, email).await? {
        Some(user) => user,
        None if users.first_sign_in == FirstSignIn::Create => {
            create_user(engine, tx, users, email).await?
        }
        None => return Err(SignInFlowError::NoAccount),
    };
    store.sign_in_link_insert(tx, issuer, subject, &user, now).await?;
    Ok(user)
}
