//! Sign-in by email and browser sessions, as use cases: a request counts a mail and emits the
//! event whose delivery mails the link and code; redeeming either finds (or, as the application
//! declares, creates) the user and starts a browser session, in one transaction of the users'
//! store; signing out ends one session or all of a user's.
//!
//! A wrong code is committed (the count must survive the refusal); every other refusal changes
//! nothing.

use jadpo_application::{Emitted, FirstSignIn, UserEntity};
use jadpo_core::id::new_id;
use jadpo_core::model::delivery::QueuedDelivery;
use jadpo_core::model::sign_in::{
    EmailAddress, MAIL_EVENT, Redeemed, SEND_WINDOW, SignInError, SourceWindow, TokenRefusal,
};
use jadpo_core::model::user_session::{BrowserSession, TokenError};
use jadpo_core::transaction::commit_or_rollback;
use jadpo_core::{StoreError, Transaction};
use serde_json::json;

use crate::commit::{CommitError, Origin, write_emitted};
use crate::context::Engine;

/// Why a sign-in step was refused. Nothing changed, except a wrong code's count.
#[derive(Debug, thiserror::Error)]
pub enum SignInFlowError {
    /// The application declares no users who sign in by email.
    #[error("this application does not offer sign-in by email")]
    NotOffered,
    /// A bad address, too many mails, no randomness, a store failure.
    #[error(transparent)]
    Request(#[from] SignInError),
    /// The link or code is not the address's live one.
    #[error(
        "the link or code does not work: it was used, replaced by a newer one, expired or locked"
    )]
    NotLive,
    /// A wrong code; `left` tries before the request locks.
    #[error("wrong code; {left} tries left before it locks")]
    WrongCode { left: u32 },
    /// No user has the address and the application does not create one at first sign-in.
    #[error("no account has this address")]
    NoAccount,
    /// The session could not be started.
    #[error(transparent)]
    Session(#[from] TokenError),
    /// An external token was refused.
    #[error(transparent)]
    Token(#[from] TokenRefusal),
    /// A passkey ceremony was refused.
    #[error(transparent)]
    Passkey(#[from] jadpo_core::model::passkey::PasskeyRefusal),
    /// The issuer's keys could not be read.
    #[error("the issuer's keys could not be read: {0}")]
    KeysUnavailable(String),
    /// The outbox refused the mail's event (a bug).
    #[error(transparent)]
    Outbox(#[from] CommitError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A sign-in mail requested: the deliveries to put on the queue now, in `store`.
#[derive(Debug)]
pub struct MailRequested {
    pub store: String,
    pub deliveries: Vec<QueuedDelivery>,
}

/// What proves the address: the mailed link's token or the mailed code.
#[derive(Debug, Clone, Copy)]
pub enum Proof<'a> {
    Link(&'a str),
    Code(&'a str),
}

fn email_users(engine: &Engine) -> Result<&UserEntity, SignInFlowError> {
    engine.app.users().filter(|u| u.mail_connection.is_some()).ok_or(SignInFlowError::NotOffered)
}

pub(crate) async fn rollback<T>(
    tx: Box<dyn Transaction>,
    e: SignInFlowError,
) -> Result<T, SignInFlowError> {
    // The refusal is what the caller needs; a failed rollback ends the transaction anyway.
    let _ = tx.rollback().await;
    Err(e)
}

/// The digest a source address's counts are kept by (the table holds no address); requests
/// whose edge gave no address share one count.
fn source_digest(source: Option<&str>) -> String {
    jadpo_core::model::service_key::verifier(&format!("source:{}", source.unwrap_or("unknown")))
}

/// Counts one more mail asked for by `source` in `tx`, refusing it past the source's hourly
/// limit or past the hourly limit overall (nothing counted then).
async fn count_source_send(
    engine: &Engine,
    store: &dyn jadpo_core::ports::SignInStore,
    tx: &mut dyn Transaction,
    source: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), SignInFlowError> {
    let limits = engine.settings.sign_in;
    let window = store.sign_in_source(tx, source, now).await?;
    if window.sends >= limits.sends_per_source {
        return Err(SignInError::TooManyFromSource.into());
    }
    let hour = chrono::Duration::from_std(SEND_WINDOW).unwrap_or(chrono::Duration::MAX);
    let sent = store.sign_in_sends_since(tx, now - hour).await?;
    if sent >= u64::from(limits.sends_overall) {
        return Err(SignInError::TooManyOverall.into());
    }
    let counted = SourceWindow { sends: window.sends + 1, ..window };
    Ok(store.sign_in_source_set(tx, source, counted).await?)
}

/// Counts a mail to `email` asked for from `source` (the client's address, as the edge saw it)
/// and emits the event whose delivery mails a link and code pointing at `public_url`. Past the
/// address's, the source's or the overall hourly limit: [`SignInError::TooMany`],
/// [`SignInError::TooManyFromSource`], [`SignInError::TooManyOverall`], nothing written. The
/// mail's delivery is put on the queue at once (what the queue refuses, the relay sends).
pub async fn request_mail(
    engine: &Engine,
    email: &str,
    public_url: &str,
    source: Option<&str>,
) -> Result<MailRequested, SignInFlowError> {
    let requested = request_mail_unsent(engine, email, public_url, source).await?;
    crate::relay::enqueue_now(engine, &requested.store, &requested.deliveries).await;
    Ok(requested)
}

/// [`request_mail`] with the mail's delivery left unsent, for the relay's sweep (its crash
/// loop's relay-only runs).
pub async fn request_mail_unsent(
    engine: &Engine,
    email: &str,
    public_url: &str,
    source: Option<&str>,
) -> Result<MailRequested, SignInFlowError> {
    let users = email_users(engine)?;
    let address = EmailAddress::parse(email)?;
    // A mail is work for the delivery side, as an action's events are: refused while the queue
    // is at its admission limit, so a flood of requests cannot crowd out every action.
    crate::commit::admit(engine).await?;
    let store = engine.store(&users.store)?;
    let now = engine.clock.now();
    let mut tx = store.begin().await?;
    let source = source_digest(source);
    if let Err(e) = count_source_send(engine, store.as_ref(), tx.as_mut(), &source, now).await {
        return rollback(tx, e).await;
    }
    // Without an account to sign in to, and none made at first sign-in, no mail goes out (the
    // answer is the same, so accounts cannot be enumerated by it); the source's request counts.
    if users.first_sign_in != FirstSignIn::Create {
        match find_by_email(tx.as_mut(), users, &address).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                tx.commit().await?;
                return Ok(MailRequested { store: users.store.clone(), deliveries: Vec::new() });
            }
            Err(e) => return rollback(tx, e.into()).await,
        }
    }
    let requested = match store
        .sign_in_request(tx.as_mut(), &address.digest(), now, engine.settings.sign_in)
        .await
    {
        Ok(r) => r,
        Err(e) => return rollback(tx, e.into()).await,
    };
    crate::fault!("sign_in.after_request");
    let expires_at = jadpo_core::clock::after(now, engine.settings.sign_in.lifetime);
    let mail = Emitted {
        event_type: MAIL_EVENT.to_owned(),
        payload: json!({
            "to": address.as_str(),
            "nonce": requested.nonce,
            "public_url": public_url,
            "expires_at": expires_at,
        }),
    };
    let origin = Origin {
        source: "sign_in",
        depth: 0,
        request_id: None,
        traceparent: None,
        tracestate: None,
    };
    let written = write_emitted(engine, store.as_ref(), tx.as_mut(), &[mail], &origin, now).await;
    let deliveries = match written {
        Ok((_, deliveries)) => deliveries,
        Err(e) => return rollback(tx, e.into()).await,
    };
    crate::fault!("sign_in.before_request_commit");
    tx.commit().await?;
    Ok(MailRequested { store: users.store.clone(), deliveries })
}

/// Signs `email` in with `proof` sent from `source` (the client's address): uses the link or
/// code, finds or creates the user, and starts a browser session, in one transaction. A source
/// past its hourly wrong codes is refused ([`SignInError::TooManyFromSource`]) before its code is
/// tried, so its guesses count against no address.
pub async fn sign_in(
    engine: &Engine,
    email: &str,
    proof: Proof<'_>,
    source: Option<&str>,
) -> Result<BrowserSession, SignInFlowError> {
    let users = email_users(engine)?;
    let address = EmailAddress::parse(email)?;
    let store = engine.store(&users.store)?;
    let now = engine.clock.now();
    let digest = address.digest();
    let mut tx = store.begin().await?;
    let source = source_digest(source);
    let window = match proof {
        Proof::Code(_) => match store.sign_in_source(tx.as_mut(), &source, now).await {
            Ok(w) if w.wrong_codes >= engine.settings.sign_in.wrong_codes_per_source => {
                return rollback(tx, SignInError::TooManyFromSource.into()).await;
            }
            Ok(w) => Some(w),
            Err(e) => return rollback(tx, e.into()).await,
        },
        Proof::Link(_) => None,
    };
    let redeemed = match proof {
        Proof::Link(token) => store.sign_in_redeem_link(tx.as_mut(), &digest, token, now).await,
        Proof::Code(code) => {
            store
                .sign_in_redeem_code(tx.as_mut(), &digest, code, now, engine.settings.sign_in)
                .await
        }
    };
    match redeemed {
        Ok(Redeemed::SignedIn) => crate::fault!("sign_in.after_redeem"),
        Ok(Redeemed::Wrong { left }) => {
            if let Some(w) = window {
                let counted = SourceWindow { wrong_codes: w.wrong_codes + 1, ..w };
                if let Err(e) = store.sign_in_source_set(tx.as_mut(), &source, counted).await {
                    return rollback(tx, e.into()).await;
                }
            }
            tx.commit().await?;
            return Err(SignInFlowError::WrongCode { left });
        }
        Ok(Redeemed::NotLive) => return rollback(tx, SignInFlowError::NotLive).await,
        Err(e) => return rollback(tx, e.into()).await,
    }
    let user = find_or_create(engine, tx.as_mut(), users, &address).await;
    start_session(engine, store.as_ref(), tx, user).await
}

/// Starts a browser session for `user` (or rolls back on its error) and commits `tx`: the last
/// step of every sign-in.
pub(crate) async fn start_session(
    engine: &Engine,
    store: &dyn jadpo_core::ports::UserSessionStore,
    mut tx: Box<dyn Transaction>,
    user: Result<String, SignInFlowError>,
) -> Result<BrowserSession, SignInFlowError> {
    let user = match user {
        Ok(user) => user,
        Err(e) => return rollback(tx, e).await,
    };
    let started = store
        .browser_session_start(
            tx.as_mut(),
            &user,
            engine.settings.browser_sessions,
            engine.clock.as_ref(),
        )
        .await
        .map_err(SignInFlowError::from);
    crate::fault!("sign_in.before_session_commit");
    commit_or_rollback(tx, started).await
}

/// The user whose email is `address`, created when the application says so.
async fn find_or_create(
    engine: &Engine,
    tx: &mut dyn Transaction,
    users: &UserEntity,
    address: &EmailAddress,
) -> Result<String, SignInFlowError> {
    if let Some(user) = find_by_email(tx, users, address).await? {
        return Ok(user);
    }
    if users.first_sign_in != FirstSignIn::Create {
        return Err(SignInFlowError::NoAccount);
    }
    create_user(engine, tx, users, address).await
}

/// The user whose email is `address`, if any.
pub(crate) async fn find_by_email(
    tx: &mut dyn Transaction,
    users: &UserEntity,
    address: &EmailAddress,
) -> Result<Option<String>, StoreError> {
    let found = tx.query_opt(&users.find_by_email_sql(), &[address.as_str().into()]).await?;
    found.map(|row| row.get_str("id").map(str::to_owned)).transpose()
}

/// A new user with `address`.
pub(crate) async fn create_user(
    engine: &Engine,
    tx: &mut dyn Transaction,
    users: &UserEntity,
    address: &EmailAddress,
) -> Result<String, SignInFlowError> {
    let id = new_id(engine.clock.as_ref()).to_string();
    tx.execute(&users.insert_sql(), &[id.as_str().into(), address.as_str().into()]).await?;
    Ok(id)
}

/// Ends session `id` (sign-out); whether it was live.
pub async fn sign_out(engine: &Engine, id: &str) -> Result<bool, StoreError> {
    let store = engine.store(engine.app.users_store())?;
    let mut tx = store.begin().await?;
    let ended = store.user_session_end(tx.as_mut(), id, engine.clock.now()).await;
    commit_or_rollback(tx, ended).await
}

/// Ends every live session of `user` ("sign out everywhere"); how many.
pub async fn sign_out_everywhere(
    engine: &Engine,
    user: &str,
    with_passkeys: bool,
) -> Result<SignedOut, StoreError> {
    let store = engine.store(engine.app.users_store())?;
    let mut tx = store.begin().await?;
    let ended = async {
        let sessions = store.user_sessions_end(tx.as_mut(), user, engine.clock.now()).await?;
        let passkeys =
            if with_passkeys { store.passkeys_remove_all(tx.as_mut(), user).await? } else { 0 };
        Ok(SignedOut { sessions, passkeys })
    }
    .await;
    commit_or_rollback(tx, ended).await
}

/// What signing out everywhere ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedOut {
    /// Sessions and API tokens ended.
    pub sessions: u64,
    /// Passkeys removed (only when asked).
    pub passkeys: u64,
}
