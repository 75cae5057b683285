//! The passkey role: registered passkeys (`jadpo_passkeys`) and the ceremonies under way
//! (`jadpo_passkey_challenges`, by their challenge's verifier, each finished at most once).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::passkey::{NewChallenge, PasskeyInfo, Purpose, StoredPasskey, TakenChallenge};
use crate::model::principal::EntityRecord;
use crate::transaction::Transaction;

/// The role that keeps passkeys and their ceremonies.
#[async_trait]
pub trait PasskeyStore: Send + Sync {
    /// Stores a ceremony that has just started.
    async fn passkey_challenge_insert(
        &self,
        tx: &mut dyn Transaction,
        challenge: &NewChallenge,
    ) -> Result<(), StoreError>;

    /// Deletes and returns the `purpose` ceremony whose challenge has `verifier`, expired or not
    /// (the caller checks; either way it is used up). `None` if there is none.
    async fn passkey_challenge_take(
        &self,
        tx: &mut dyn Transaction,
        verifier: &str,
        purpose: Purpose,
    ) -> Result<Option<TakenChallenge>, StoreError>;

    /// The passkeys of `user_id`, oldest first.
    async fn passkeys_of_user(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
    ) -> Result<Vec<StoredPasskey>, StoreError>;

    /// Stores a newly registered passkey at `now`; `false` if its credential id is registered
    /// already (nothing changes then).
    async fn passkey_insert(
        &self,
        tx: &mut dyn Transaction,
        passkey: &StoredPasskey,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// The passkey with `credential_id` — with `users`, only if its user's record exists (one
    /// statement, the record read with the passkey).
    async fn passkey_find(
        &self,
        tx: &mut dyn Transaction,
        credential_id: &str,
        users: Option<EntityRecord<'_>>,
    ) -> Result<Option<StoredPasskey>, StoreError>;

    /// The passkeys of `user_id` as the user lists them, oldest first.
    async fn passkeys_listed(&self, user_id: &str) -> Result<Vec<PasskeyInfo>, StoreError>;

    /// Deletes passkey `credential_id` inside `tx` if it is `user_id`'s; `false` if it is not
    /// (none, or another user's: nothing changes).
    async fn passkey_remove(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
        credential_id: &str,
    ) -> Result<bool, StoreError>;

    /// Deletes every passkey of `user_id` inside `tx`: how many.
    async fn passkeys_remove_all(
        &self,
        tx: &mut dyn Transaction,
        user_id: &str,
    ) -> Result<u64, StoreError>;

    /// Records a sign-in with the passkey: its new counters, and when.
    async fn passkey_used(
        &self,
        tx: &mut dyn Transaction,
        credential_id: &str,
        counters: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
}
