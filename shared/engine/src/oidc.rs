//! Sign-in with an external token: an OpenID Connect ID token from a provider the application
//! declares ([`OidcProvider`]: issuer, audience, and the connection that serves its key set).
//!
//! The token's signature is checked against the issuer's published keys (fetched through the
//! declared connection at each sign-in: sign-ins are rare next to requests, and a rotated key is
//! then seen at once), then its issuer, audience, expiry and start against the runtime's clock.
//! Only asymmetric algorithms are accepted, so a token cannot be signed with a public key as an
//! HMAC secret. The identity (issuer, subject) signs in the user it was linked to at its first
//! sign-in (`jadpo_sign_in_links`); a first sign-in is decided by the application's policy: link
//! to the user holding the token's verified email, create one, or refuse.

use jadpo_core::app::{FirstSignIn, OidcProvider, UserEntity};
use jadpo_core::model::sign_in::{EmailAddress, TokenRefusal};
use jadpo_core::model::user_session::BrowserSession;
use jadpo_core::{Store, Transaction};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use serde_json::Value;

use crate::context::Engine;
use crate::sign_in::{SignInFlowError, create_user, find_by_email, start_session};

/// How much a token's clock may differ from ours.
const LEEWAY_S: i64 = 60;

/// Who a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalIdentity {
    pub issuer: String,
    pub subject: String,
    /// The token's email, only when the issuer says it is verified.
    pub verified_email: Option<EmailAddress>,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    exp: i64,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    email: Option<String>,
    /// A boolean, or (some issuers) the string `"true"`.
    #[serde(default)]
    email_verified: Option<Value>,
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
    let verified = claims.email_verified.as_ref().is_some_and(|v| v == true || v == "true");
    let verified_email =
        claims.email.filter(|_| verified).and_then(|e| EmailAddress::parse(&e).ok());
    Ok(ExternalIdentity { issuer: provider.issuer.clone(), subject: claims.sub, verified_email })
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

/// Signs in with `token` from the declared provider `name`: verifies it, finds the user its
/// identity is linked to (or links one, as the application's policy says) and starts a browser
/// session, in one transaction of the users' store.
pub async fn sign_in_with_token(
    p: &Engine,
    name: &str,
    token: &str,
) -> Result<BrowserSession, SignInFlowError> {
    let users = p.app.users().ok_or(SignInFlowError::NotOffered)?;
    let provider = users.provider(name).ok_or(SignInFlowError::NotOffered)?;
    let keys = p
        .connections
        .get(&provider.keys_connection, "")
        .await
        .map_err(|e| SignInFlowError::KeysUnavailable(e.to_string()))?;
    let keys: JwkSet = serde_json::from_value(keys.body)
        .map_err(|e| SignInFlowError::KeysUnavailable(format!("not a key set: {e}")))?;
    let now = p.clock.now();
    let identity = verify(provider, &keys, token, now.timestamp())?;
    let store = p.store(&users.store)?;
    let mut tx = store.begin().await?;
    let user = linked_user(p, store.as_ref(), tx.as_mut(), users, &identity).await;
    start_session(p, store.as_ref(), tx, user).await
}

/// The user `identity` is linked to; at its first sign-in, the one the policy links it to.
async fn linked_user(
    p: &Engine,
    store: &dyn Store,
    tx: &mut dyn Transaction,
    users: &UserEntity,
    identity: &ExternalIdentity,
) -> Result<String, SignInFlowError> {
    let now = p.clock.now();
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
            create_user(p, tx, users, email).await?
        }
        None => return Err(SignInFlowError::NoAccount),
    };
    store.sign_in_link_insert(tx, issuer, subject, &user, now).await?;
    Ok(user)
}
