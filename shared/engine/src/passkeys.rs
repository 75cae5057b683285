//! Passkeys (WebAuthn), as use cases over `webauthn_rp` (RustCrypto; no OpenSSL): a signed-in
//! user registers a passkey, and anyone signs in with one, each in two steps — the options the
//! browser passes to `navigator.credentials`, then the response it gives back.
//!
//! Each ceremony is stored in the users' store by its challenge's verifier and taken (deleted)
//! when its response arrives, in a transaction of its own, so a challenge is answered at most
//! once, even by a response that is then refused. The ceremony's state is kept with its
//! challenge zeroed: the response carries the challenge, and only the right one finds the row.
//! A sign-in reads the passkey with its user's record, updates its counters and starts a browser
//! session in one transaction.

use data_encoding::BASE64URL_NOPAD;
use jadpo_application::UserEntity;
use jadpo_core::model::encoding::Kept;
use jadpo_core::model::passkey::{
    ENCODING, NewChallenge, PasskeyInfo, PasskeyRefusal, Purpose, StoredPasskey, TakenChallenge,
};
use jadpo_core::model::service_key::verifier;
use jadpo_core::model::user_session::BrowserSession;
use jadpo_core::ports::PasskeyStore;
use jadpo_core::transaction::commit_or_rollback;
use jadpo_core::{Store, Transaction};
use serde_json::Value;
use webauthn_rp::bin::{Decode, Encode};
use webauthn_rp::request::auth::AuthenticationVerificationOptions;
use webauthn_rp::request::register::{
    CredProtect, PublicKeyCredentialUserEntity, RegistrationVerificationOptions,
    USER_HANDLE_MAX_LEN, UserHandle64, Username,
};
use webauthn_rp::request::{
    AsciiDomain, ExtensionInfo, PublicKeyCredentialDescriptor, RpId, TimedCeremony,
};
use webauthn_rp::response::register::{CompressedPubKey, DynamicState, StaticState};
use webauthn_rp::response::{AuthTransports, CredentialId, SentChallenge};
use webauthn_rp::{
    AuthenticatedCredential, DiscoverableAuthentication64, DiscoverableAuthenticationServerState,
    DiscoverableCredentialRequestOptions, PublicKeyCredentialCreationOptions, Registration,
    RegistrationServerState,
};

use crate::context::Engine;
use crate::sign_in::{SignInFlowError, rollback, start_session};

/// How long a ceremony may take: the five minutes the options give the browser.
const CEREMONY: chrono::Duration = chrono::Duration::minutes(5);
/// Where the 16-byte challenge sits in each ceremony's encoded state (`webauthn_rp` 0.3's `bin`
/// form: a registration's starts with one byte of mediation; a sign-in's with the challenge).
fn challenge_at(purpose: Purpose) -> usize {
    match purpose {
        Purpose::Register => 1,
        Purpose::SignIn => 0,
    }
}

/// Ask the device to use the passkey only after verifying the user, without making it refuse to
/// create one when it cannot say so: browsers fail a creation whose protection is enforced on
/// authenticators without the extension (Chrome's included), and the ceremonies require user
/// verification anyway.
const ASK_USER_VERIFICATION: CredProtect =
    CredProtect::UserVerificationRequired(ExtensionInfo::AllowDontEnforceValue);

/// The stored public key type a sign-in verifies with.
type PublicKey = CompressedPubKey<[u8; 32], [u8; 32], [u8; 48], Vec<u8>>;

/// This server as a WebAuthn relying party: its id (the public URL's host) and the origin
/// browsers report (the public URL's scheme, host and port).
#[derive(Debug, Clone)]
pub struct RelyingParty {
    id: RpId,
    origin: String,
}

impl RelyingParty {
    /// The relying party at `public_url` (`https://shop.example.com`, or locally
    /// `http://localhost:3000`). An IP address cannot be one: browsers refuse it.
    pub fn from_public_url(public_url: &str) -> Result<Self, PasskeyRefusal> {
        let refuse = |why: &str| PasskeyRefusal::NoRelyingParty(format!("{public_url:?}: {why}"));
        let (scheme, rest) = public_url.split_once("://").ok_or_else(|| refuse("no scheme"))?;
        let authority = rest.split('/').next().unwrap_or_default();
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        if host.is_empty() || host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
            return Err(refuse("the host must be a name, not an IP address"));
        }
        if scheme != "https" && !(scheme == "http" && host == "localhost") {
            return Err(refuse("only https://, or http://localhost"));
        }
        let domain = AsciiDomain::try_from(host.to_ascii_lowercase())
            .map_err(|e| refuse(&format!("not a domain name: {e}")))?;
        Ok(Self { id: RpId::Domain(domain), origin: format!("{scheme}://{authority}") })
    }
}

/// The options as `navigator.credentials` takes them: `{"publicKey": …}`.
fn public_key(options: Value) -> Value {
    serde_json::json!({ "publicKey": options })
}

fn users(engine: &Engine) -> Result<&UserEntity, SignInFlowError> {
    engine.app.users().ok_or(SignInFlowError::NotOffered)
}

fn unreadable(what: &str, e: impl std::fmt::Display) -> PasskeyRefusal {
    PasskeyRefusal::Unreadable(format!("{what}: {e}"))
}

fn malformed(e: impl std::fmt::Display) -> PasskeyRefusal {
    PasskeyRefusal::Malformed(e.to_string())
}

fn refused(e: impl std::fmt::Display) -> PasskeyRefusal {
    PasskeyRefusal::Refused(e.to_string())
}

/// The challenge's verifier: what its ceremony is stored by.
fn challenge_verifier(sent: SentChallenge) -> String {
    verifier(&format!("{:032x}", sent.0))
}

/// A `purpose` ceremony's `state` with its challenge (`sent`) zeroed; refuses a state whose
/// challenge is not where the `webauthn_rp_bin` form keeps it (a `webauthn_rp` whose form changed).
fn blank(
    mut state: Vec<u8>,
    purpose: Purpose,
    sent: SentChallenge,
) -> Result<Vec<u8>, PasskeyRefusal> {
    let at = challenge_at(purpose);
    let slot = state.get_mut(at..at + 16).ok_or_else(|| unreadable("ceremony", "too short"))?;
    if *slot != sent.0.to_le_bytes() {
        return Err(unreadable(
            "ceremony",
            "its challenge is not where the webauthn_rp_bin form keeps it",
        ));
    }
    slot.fill(0);
    Ok(state)
}

/// Refuses a stored `what` written in a form this release cannot read (`None`: written before
/// encodings were recorded, read as the one form passkeys were first kept in).
fn readable(what: &str, encoding: Option<i16>) -> Result<(), PasskeyRefusal> {
    let read = Kept::Passkey.read(encoding.map(i64::from));
    read.map(|_| ()).map_err(|e| unreadable(what, e.to_string()))
}

/// A taken `purpose` ceremony's state with the presented challenge put back.
fn restore(
    taken: TakenChallenge,
    purpose: Purpose,
    sent: SentChallenge,
) -> Result<Vec<u8>, PasskeyRefusal> {
    let at = challenge_at(purpose);
    readable("ceremony", taken.encoding)?;
    let mut state = taken.state;
    let slot = state.get_mut(at..at + 16).ok_or_else(|| unreadable("ceremony", "too short"))?;
    slot.copy_from_slice(&sent.0.to_le_bytes());
    Ok(state)
}

/// Stores a ceremony that has just started and commits.
async fn keep(
    store: &dyn PasskeyStore,
    mut tx: Box<dyn Transaction>,
    challenge: NewChallenge,
) -> Result<(), SignInFlowError> {
    let kept = store.passkey_challenge_insert(tx.as_mut(), &challenge).await;
    crate::fault!("passkey.before_challenge_commit");
    Ok(commit_or_rollback(tx, kept).await?)
}

/// Takes (deletes) the `purpose` ceremony `sent` answers, in a transaction of its own: once
/// presented, it is used up, whatever comes of the response. Refuses one that expired or is
/// bound to someone else than `bound_to`. Its state, the challenge put back.
async fn take(
    engine: &Engine,
    store: &dyn Store,
    sent: SentChallenge,
    purpose: Purpose,
    bound_to: Option<&str>,
) -> Result<Vec<u8>, SignInFlowError> {
    let mut tx = store.begin().await?;
    let verifier = challenge_verifier(sent);
    let taken = store.passkey_challenge_take(tx.as_mut(), &verifier, purpose).await;
    let taken = commit_or_rollback(tx, taken).await?;
    crate::fault!("passkey.after_take");
    match taken {
        Some(t) if t.expires_at > engine.clock.now() && t.bound_to.as_deref() == bound_to => {
            Ok(restore(t, purpose, sent)?)
        }
        _ => Err(PasskeyRefusal::NoCeremony.into()),
    }
}

/// A ceremony `webauthn_rp` has just started: its challenge and its encoded state.
struct Begun {
    purpose: Purpose,
    sent: SentChallenge,
    state: Result<Vec<u8>, PasskeyRefusal>,
}

impl Begun {
    /// The ceremony as it is stored (bound to `bound_to`, its challenge blanked, ending in five
    /// minutes by the engine's clock) and its `options` as the browser gets them.
    fn kept(
        self,
        engine: &Engine,
        bound_to: Option<&str>,
        options: serde_json::Result<Value>,
    ) -> Result<(NewChallenge, Value), PasskeyRefusal> {
        let state = blank(self.state?, self.purpose, self.sent)?;
        let challenge = NewChallenge {
            verifier: challenge_verifier(self.sent),
            purpose: self.purpose,
            bound_to: bound_to.map(str::to_owned),
            state,
            expires_at: engine.clock.now() + CEREMONY,
        };
        Ok((challenge, options.map(public_key).map_err(malformed)?))
    }
}

fn user_handle(stored: &str) -> Result<UserHandle64, PasskeyRefusal> {
    let bytes =
        BASE64URL_NOPAD.decode(stored.as_bytes()).map_err(|e| unreadable("user handle", e))?;
    let bytes: [u8; USER_HANDLE_MAX_LEN] =
        bytes.try_into().map_err(|_| unreadable("user handle", "not 64 bytes"))?;
    UserHandle64::decode(bytes).map_err(|e| unreadable("user handle", format!("{e:?}")))
}

fn descriptor(k: &StoredPasskey) -> Result<PublicKeyCredentialDescriptor<Vec<u8>>, PasskeyRefusal> {
    let id = BASE64URL_NOPAD
        .decode(k.credential_id.as_bytes())
        .map_err(|e| unreadable("credential id", e))?;
    let id = CredentialId::decode(id).map_err(|e| unreadable("credential id", e))?;
    let transports = AuthTransports::decode(0).map_err(|e| unreadable("transports", e))?;
    Ok(PublicKeyCredentialDescriptor { id, transports })
}

/// Starts registering a passkey for signed-in `user_id`: the options for
/// `navigator.credentials.create` (as JSON; the browser's `parseCreationOptionsFromJSON` reads
/// its `publicKey`). The user's passkeys are excluded, and a second passkey gets the first one's
/// user handle.
pub async fn register_options(
    engine: &Engine,
    rp: &RelyingParty,
    user_id: &str,
) -> Result<Value, SignInFlowError> {
    let users = users(engine)?;
    let store = engine.store(&users.store)?;
    let mut tx = store.begin().await?;
    let prepared = prepare_registration(store.as_ref(), tx.as_mut(), users, user_id).await;
    let (email, handle, exclude) = match prepared {
        Ok(found) => found,
        Err(e) => return rollback(tx, e).await,
    };
    let begun = Username::try_from(email.as_str())
        .map_err(|e| refused(format!("the user's address as a passkey name: {e}")))
        .and_then(|name| {
            let entity = PublicKeyCredentialUserEntity { name, id: &handle, display_name: None };
            let mut options = PublicKeyCredentialCreationOptions::passkey(&rp.id, entity, exclude);
            options.extensions.cred_protect = ASK_USER_VERIFICATION;
            options.start_ceremony().map_err(refused)
        })
        .and_then(|(server, client)| {
            let state = server.encode().map_err(|e| unreadable("ceremony", e));
            let begun = Begun { purpose: Purpose::Register, sent: server.sent_challenge(), state };
            begun.kept(engine, Some(user_id), serde_json::to_value(&client))
        });
    match begun {
        Ok((challenge, options)) => {
            keep(store.as_ref(), tx, challenge).await?;
            Ok(options)
        }
        Err(e) => rollback(tx, e.into()).await,
    }
}

/// The user's address, their user handle and the passkeys to exclude.
async fn prepare_registration(
    store: &dyn PasskeyStore,
    tx: &mut dyn Transaction,
    users: &UserEntity,
    user_id: &str,
) -> Result<(String, UserHandle64, Vec<PublicKeyCredentialDescriptor<Vec<u8>>>), SignInFlowError> {
    let row = tx.query_opt(&users.email_by_id_sql(), &[user_id.into()]).await?;
    let email = match row {
        Some(row) => row.get_str("email")?.to_owned(),
        None => return Err(SignInFlowError::NoAccount),
    };
    let existing = store.passkeys_of_user(tx, user_id).await?;
    let handle = match existing.first() {
        Some(k) => user_handle(&k.user_handle)?,
        None => UserHandle64::new(),
    };
    let exclude = existing.iter().map(descriptor).collect::<Result<Vec<_>, _>>()?;
    Ok((email, handle, exclude))
}

/// Finishes registering: verifies the browser's response (`PublicKeyCredential.toJSON()`)
/// against the ceremony `user_id` started, and stores the passkey. Its credential id, base64url.
pub async fn register(
    engine: &Engine,
    rp: &RelyingParty,
    user_id: &str,
    response: &[u8],
) -> Result<String, SignInFlowError> {
    let users = users(engine)?;
    let registration = Registration::from_json_relaxed(response).map_err(malformed)?;
    let sent = registration.challenge_relaxed().map_err(malformed)?;
    let store = engine.store(&users.store)?;
    let state = take(engine, store.as_ref(), sent, Purpose::Register, Some(user_id)).await?;
    let server = RegistrationServerState::<USER_HANDLE_MAX_LEN>::decode(state.as_slice())
        .map_err(|e| unreadable("ceremony", e))?;
    let options = RegistrationVerificationOptions::<&str, &str> {
        allowed_origins: &[rp.origin.as_str()],
        ..RegistrationVerificationOptions::default()
    };
    let credential = server.verify(&rp.id, &registration, &options).map_err(refused)?;
    let (id, _transports, handle, static_state, dynamic, _metadata) = credential.into_parts();
    let passkey = StoredPasskey {
        credential_id: BASE64URL_NOPAD.encode(id.as_ref()),
        user_id: user_id.to_owned(),
        user_handle: BASE64URL_NOPAD.encode(handle.as_ref()),
        credential: static_state
            .encode()
            .map_err(|e| unreadable("credential", format!("{e:?}")))?,
        counters: dynamic.encode().map_err(|e| unreadable("counters", format!("{e:?}")))?.to_vec(),
        encoding: Some(ENCODING),
    };
    let now = engine.clock.now();
    let mut tx = store.begin().await?;
    let inserted = async {
        if !store.passkey_insert(tx.as_mut(), &passkey, now).await? {
            return Ok(None);
        }
        let told = tell_user(engine, store.as_ref(), tx.as_mut(), users, &passkey, now).await?;
        Ok::<_, SignInFlowError>(Some(told))
    }
    .await;
    crate::fault!("passkey.before_register_commit");
    match commit_or_rollback(tx, inserted).await? {
        Some(deliveries) => {
            crate::relay::enqueue_now(engine, &users.store, &deliveries).await;
            Ok(passkey.credential_id)
        }
        None => Err(PasskeyRefusal::AlreadyRegistered.into()),
    }
}

/// Emits, in the registering transaction, the event whose delivery mails the user that
/// `passkey` was added (when the application mails its users and the user has an address): a
/// passkey added by someone at a session left open does not go unnoticed. The deliveries to
/// send once it commits.
async fn tell_user(
    engine: &Engine,
    store: &dyn Store,
    tx: &mut dyn Transaction,
    users: &UserEntity,
    passkey: &StoredPasskey,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<jadpo_core::model::delivery::QueuedDelivery>, SignInFlowError> {
    if users.mail_connection.is_none() {
        return Ok(Vec::new());
    }
    let row = tx.query_opt(&users.email_by_id_sql(), &[passkey.user_id.as_str().into()]).await?;
    let Some(to) = row.map(|r| r.get_str("email").map(str::to_owned)).transpose()? else {
        return Ok(Vec::new());
    };
    let event = jadpo_application::Emitted {
        event_type: jadpo_core::model::sign_in::PASSKEY_ADDED_EVENT.to_owned(),
        payload: serde_json::json!({
            "to": to,
            "credential_id": passkey.credential_id,
            "added_at": now,
        }),
    };
    let origin = crate::commit::Origin {
        source: "passkeys",
        depth: 0,
        request_id: None,
        traceparent: None,
        tracestate: None,
    };
    let written = crate::commit::write_emitted(engine, store, tx, &[event], &origin, now).await?;
    Ok(written.1)
}

/// Starts a sign-in with a passkey: the options for `navigator.credentials.get` (as JSON; the
/// browser's `parseRequestOptionsFromJSON` reads its `publicKey`). The device offers its
/// passkeys for this site; the response says which, and whose.
pub async fn sign_in_options(engine: &Engine, rp: &RelyingParty) -> Result<Value, SignInFlowError> {
    let users = users(engine)?;
    let (server, client) =
        DiscoverableCredentialRequestOptions::passkey(&rp.id).start_ceremony().map_err(refused)?;
    let state = server.encode().map_err(|e| unreadable("ceremony", e));
    let begun = Begun { purpose: Purpose::SignIn, sent: server.sent_challenge(), state };
    let (challenge, options) = begun.kept(engine, None, serde_json::to_value(&client))?;
    let store = engine.store(&users.store)?;
    let tx = store.begin().await?;
    keep(store.as_ref(), tx, challenge).await?;
    Ok(options)
}

/// Finishes a sign-in: verifies the browser's response against the ceremony it answers and the
/// passkey it names (read with its user's record), records the passkey's new counters and starts
/// a browser session, in one transaction.
pub async fn sign_in(
    engine: &Engine,
    rp: &RelyingParty,
    response: &[u8],
) -> Result<BrowserSession, SignInFlowError> {
    let users = users(engine)?;
    let auth = DiscoverableAuthentication64::from_json_relaxed(response).map_err(malformed)?;
    let sent = auth.challenge_relaxed().map_err(malformed)?;
    let store = engine.store(&users.store)?;
    let state = take(engine, store.as_ref(), sent, Purpose::SignIn, None).await?;
    let server = DiscoverableAuthenticationServerState::decode(state.as_slice())
        .map_err(|e| unreadable("ceremony", e))?;
    let mut tx = store.begin().await?;
    let credential_id = BASE64URL_NOPAD.encode(auth.raw_id().as_ref());
    let found = store.passkey_find(tx.as_mut(), &credential_id, Some(users.record())).await;
    let verified = match found {
        Ok(Some(passkey)) => verify_assertion(rp, server, &auth, &passkey).map(|c| (passkey, c)),
        Ok(None) => Err(PasskeyRefusal::UnknownPasskey.into()),
        Err(e) => Err(e.into()),
    };
    let (passkey, counters) = match verified {
        Ok(pair) => pair,
        Err(e) => return rollback(tx, e).await,
    };
    let used = store.passkey_used(tx.as_mut(), &credential_id, &counters, engine.clock.now()).await;
    let user = used.map(|()| passkey.user_id).map_err(SignInFlowError::from);
    start_session(engine, store.as_ref(), tx, user).await
}

/// Checks an assertion against the stored passkey; its new counters.
fn verify_assertion(
    rp: &RelyingParty,
    server: DiscoverableAuthenticationServerState,
    auth: &DiscoverableAuthentication64,
    passkey: &StoredPasskey,
) -> Result<Vec<u8>, SignInFlowError> {
    readable("credential", passkey.encoding)?;
    let handle = user_handle(&passkey.user_handle)?;
    let static_state = StaticState::<PublicKey>::decode(passkey.credential.as_slice())
        .map_err(|e| unreadable("credential", e))?;
    let counters: [u8; 7] = passkey
        .counters
        .as_slice()
        .try_into()
        .map_err(|_| unreadable("counters", "not 7 bytes"))?;
    let dynamic = DynamicState::decode(counters).map_err(|e| unreadable("counters", e))?;
    let mut credential =
        AuthenticatedCredential::new(auth.raw_id(), &handle, static_state, dynamic)
            .map_err(|e| unreadable("credential", e))?;
    let options = AuthenticationVerificationOptions::<&str, &str> {
        allowed_origins: &[rp.origin.as_str()],
        ..AuthenticationVerificationOptions::default()
    };
    server.verify(&rp.id, auth, &mut credential, &options).map_err(refused)?;
    let counters = credential
        .dynamic_state()
        .encode()
        .map_err(|e| unreadable("counters", format!("{e:?}")))?;
    Ok(counters.to_vec())
}

/// The passkeys `user_id` registered, oldest first (never their keys).
pub async fn list(engine: &Engine, user_id: &str) -> Result<Vec<PasskeyInfo>, SignInFlowError> {
    let users = users(engine)?;
    Ok(engine.store(&users.store)?.passkeys_listed(user_id).await?)
}

/// Removes `user_id`'s passkey `credential_id`: it signs nobody in from now on. `false` when the
/// user has no such passkey (none, or another user's: nothing changes).
pub async fn remove(
    engine: &Engine,
    user_id: &str,
    credential_id: &str,
) -> Result<bool, SignInFlowError> {
    let users = users(engine)?;
    let store = engine.store(&users.store)?;
    let mut tx = store.begin().await?;
    let removed = store.passkey_remove(tx.as_mut(), user_id, credential_id).await;
    let removed = jadpo_core::transaction::commit_or_rollback(tx, removed).await?;
    if removed {
        tracing::info!(user = %user_id, "passkey removed");
    }
    Ok(removed)
}

/// Removes `user_id`'s passkey `credential_id`, or every one of them (`None`), as `operator`,
/// recorded as `passkeys.remove` in the same transaction: how many went. A credential id that
/// is not the user's is refused (`UnknownPasskey`) with nothing removed or recorded.
pub async fn remove_as_operator(
    engine: &Engine,
    operator: &crate::operate::Operator,
    user_id: &str,
    credential_id: Option<&str>,
) -> Result<u64, SignInFlowError> {
    let users = users(engine)?;
    let store = engine.store(&users.store)?;
    let before = store.passkeys_listed(user_id).await?;
    let mut change =
        crate::operate::Change::begin(store.as_ref(), operator, engine.clock.as_ref()).await?;
    let result = async {
        let removed = match credential_id {
            Some(id) if !store.passkey_remove(change.tx(), user_id, id).await? => {
                // Not this user's: nothing removed, nothing recorded.
                return Err(SignInFlowError::Passkey(PasskeyRefusal::UnknownPasskey));
            }
            Some(_) => 1,
            None => store.passkeys_remove_all(change.tx(), user_id).await?,
        };
        let ids: Vec<&str> = before.iter().map(|k| k.credential_id.as_str()).collect();
        let action = jadpo_core::model::operator::OperatorAction {
            action: "passkeys.remove",
            item_kind: "user",
            item: user_id,
            item_state: serde_json::json!({"passkeys": ids}),
            detail: Some(credential_id.map_or_else(|| "every passkey".to_owned(), str::to_owned)),
        };
        change.record(&action).await?;
        Ok::<_, SignInFlowError>(removed)
    }
    .await;
    change.finish(result).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relying_party_is_a_named_host_over_https_or_localhost() {
        let rp = RelyingParty::from_public_url("https://shop.example.com/")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rp.origin, "https://shop.example.com");
        let local = RelyingParty::from_public_url("http://localhost:3000")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(local.origin, "http://localhost:3000");
        for bad in [
            "http://127.0.0.1:3000",
            "http://shop.example.com",
            "shop.example.com",
            "https://[::1]:3000",
        ] {
            assert!(RelyingParty::from_public_url(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_ceremony_kept_without_its_challenge_comes_back_whole() {
        let rp = RelyingParty::from_public_url("https://shop.example.com")
            .unwrap_or_else(|e| panic!("{e}"));
        let (server, _) = DiscoverableCredentialRequestOptions::passkey(&rp.id)
            .start_ceremony()
            .unwrap_or_else(|e| panic!("{e}"));
        let sent = server.sent_challenge();
        let encoded = server.encode().unwrap_or_else(|e| panic!("{e}"));
        let kept = blank(encoded.clone(), Purpose::SignIn, sent).unwrap_or_else(|e| panic!("{e}"));
        assert!(!kept.windows(16).any(|w| w == sent.0.to_le_bytes()), "the challenge was kept");
        let taken = TakenChallenge {
            bound_to: None,
            state: kept,
            encoding: Some(ENCODING),
            expires_at: chrono::Utc::now(),
        };
        assert_eq!(restore(taken, Purpose::SignIn, sent).ok(), Some(encoded));

        let handle = UserHandle64::new();
        let name = Username::try_from("ann@example.com").unwrap_or_else(|e| panic!("{e}"));
        let entity = PublicKeyCredentialUserEntity { name, id: &handle, display_name: None };
        let (server, _) = PublicKeyCredentialCreationOptions::passkey(&rp.id, entity, Vec::new())
            .start_ceremony()
            .unwrap_or_else(|e| panic!("{e}"));
        let sent = server.sent_challenge();
        let encoded = server.encode().unwrap_or_else(|e| panic!("{e}"));
        let kept =
            blank(encoded.clone(), Purpose::Register, sent).unwrap_or_else(|e| panic!("{e}"));
        assert!(!kept.windows(16).any(|w| w == sent.0.to_le_bytes()), "the challenge was kept");
        let taken = TakenChallenge {
            bound_to: None,
            state: kept,
            encoding: Some(ENCODING),
            expires_at: chrono::Utc::now(),
        };
        assert_eq!(restore(taken, Purpose::Register, sent).ok(), Some(encoded));
        let wrong = SentChallenge(sent.0 ^ 1);
        assert!(blank(server.encode().unwrap_or_default(), Purpose::Register, wrong).is_err());
    }
}
