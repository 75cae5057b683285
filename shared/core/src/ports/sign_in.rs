//! The sign-in request role: magic links and one-time codes by email (`jadpo_sign_in_requests`),
//! one row per address digest, holding only verifiers and the counts the limits read; and the
//! links from external identities (an OpenID Connect issuer and subject) to users
//! (`jadpo_sign_in_links`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::sign_in::{Redeemed, Requested, SignInError, SignInLimits, SourceWindow};
use crate::transaction::{Transaction, TransactionalStore};

/// The role that keeps sign-in requests; it begins its own transactions (the sign-in mail arms
/// a request on its own, before it mails).
#[async_trait]
pub trait SignInStore: TransactionalStore {
    /// Counts a mail to the address with `digest` inside `tx` and gives it a new nonce; the
    /// address's earlier link and code stop working. [`SignInError::TooMany`] past
    /// [`SignInLimits::sends_per_hour`] (nothing changes then).
    async fn sign_in_request(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        now: DateTime<Utc>,
        limits: SignInLimits,
    ) -> Result<Requested, SignInError>;

    /// Stores the verifiers of a freshly made link and code on the request, if `nonce` is still
    /// its latest and unused; whether it was (a superseded request's mail is not sent).
    async fn sign_in_arm(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        nonce: &str,
        link_verifier: &str,
        code_verifier: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Uses the address's live link if `link` is it.
    async fn sign_in_redeem_link(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        link: &str,
        now: DateTime<Utc>,
    ) -> Result<Redeemed, StoreError>;

    /// Uses the address's live code if `code` is it; otherwise counts a wrong try, and locks the
    /// request (link and code) at [`SignInLimits::wrong_codes`].
    async fn sign_in_redeem_code(
        &self,
        tx: &mut dyn Transaction,
        digest: &str,
        code: &str,
        now: DateTime<Utc>,
        limits: SignInLimits,
    ) -> Result<Redeemed, StoreError>;

    /// The user external identity (`issuer`, `subject`) is linked to, recording the sign-in.
    async fn sign_in_link_find(
        &self,
        tx: &mut dyn Transaction,
        issuer: &str,
        subject: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError>;

    /// The counts of the source address whose digest is `source_digest` in its current hour
    /// (a window over by `now` starts again), its row made if missing and locked for `tx` where
    /// the dialect locks rows.
    async fn sign_in_source(
        &self,
        tx: &mut dyn Transaction,
        source_digest: &str,
        now: DateTime<Utc>,
    ) -> Result<SourceWindow, StoreError>;

    /// Writes the source's counts.
    async fn sign_in_source_set(
        &self,
        tx: &mut dyn Transaction,
        source_digest: &str,
        window: SourceWindow,
    ) -> Result<(), StoreError>;

    /// The mails counted in the addresses' send windows started after `since`.
    async fn sign_in_sends_since(
        &self,
        tx: &mut dyn Transaction,
        since: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Records the ID token whose SHA-256 is `token_digest` as used until `expires_at`; false
    /// when it already was (a replay), and nothing changes.
    async fn sign_in_token_spend(
        &self,
        tx: &mut dyn Transaction,
        token_digest: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Links external identity (`issuer`, `subject`) to `user_id` (its first sign-in).
    async fn sign_in_link_insert(
        &self,
        tx: &mut dyn Transaction,
        issuer: &str,
        subject: &str,
        user_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}
