//! `PasskeySql`: the slots of the passkey role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_passkeys` and `jadpo_passkey_challenges`.
    pub struct PasskeySql {
        /// Stores a ceremony under way.
        challenge_insert(challenge_verifier, purpose, bound_to, state, encoding, expires_at),
        /// Deletes the ceremony with this verifier and purpose, returning `bound_to`, `state`,
        /// `encoding` and `expires_at`.
        challenge_take(challenge_verifier, purpose),
        /// A user's passkeys (every column), oldest first.
        of_user(user_id),
        /// Stores a passkey unless its credential id is registered already.
        insert(credential_id, user_id, user_handle, credential, counters, encoding, now),
        /// The passkey with this credential id (every column).
        find(credential_id),
        /// Records a sign-in: new counters, when.
        used(credential_id, counters, now),
        /// Returns `credential_id, registered_at, last_used_at` of a user's passkeys, oldest
        /// first.
        listed(user_id),
        /// Deletes the passkey with this credential id if it is this user's.
        remove(credential_id, user_id),
        /// Deletes every passkey of a user.
        remove_all(user_id),
    }
}
