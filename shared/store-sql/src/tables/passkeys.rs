//! `PasskeySql`: the slots of the passkey role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_passkeys` and `jadpo_passkey_challenges`.
    pub struct PasskeySql {
        /// Stores a ceremony under way.
        challenge_insert: ChallengeInsert(
            challenge_verifier: String,
            purpose: String,
            bound_to: Option<String>,
            state: Vec<u8>,
            encoding: i64,
            expires_at: DateTime<Utc>,
        ),
        /// Deletes the ceremony with this verifier and purpose, returning `bound_to`, `state`,
        /// `encoding` and `expires_at`.
        challenge_take: ChallengeTake(challenge_verifier: String, purpose: String),
        /// A user's passkeys (every column), oldest first.
        of_user: OfUser(user_id: String),
        /// Stores a passkey unless its credential id is registered already.
        insert: Insert(
            credential_id: String,
            user_id: String,
            user_handle: String,
            credential: Vec<u8>,
            counters: Vec<u8>,
            encoding: i64,
            now: DateTime<Utc>,
        ),
        /// The passkey with this credential id (every column).
        find: Find(credential_id: String),
        /// Records a sign-in: new counters, when.
        used: Used(credential_id: String, counters: Vec<u8>, now: DateTime<Utc>),
        /// Returns `credential_id, registered_at, last_used_at` of a user's passkeys, oldest
        /// first.
        listed: Listed(user_id: String),
        /// Deletes the passkey with this credential id if it is this user's.
        remove: Remove(credential_id: String, user_id: String),
        /// Deletes every passkey of a user.
        remove_all: RemoveAll(user_id: String),
    }
}
