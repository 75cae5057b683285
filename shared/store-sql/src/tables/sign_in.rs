//! `SignInSql`: the slots of the sign-in request role's statements, each with its parameters.

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_sign_in_requests` and `jadpo_sign_in_links`.
    pub struct SignInSql {
        /// Makes the address's row if it has none (no send counted, nothing live); a row that
        /// exists is left as it is.
        request_ensure(address_digest, now),
        /// Returns the address's row (`nonce`, `window_started_at`, `sends_in_window`,
        /// `code_verifier`, `wrong_codes`, `expires_at`, `used_at`), locked for this transaction
        /// where the dialect locks rows.
        request_find(address_digest),
        /// Counts a send and starts a new request: the old link and code stop working.
        request_renew(address_digest, nonce, now, window_started_at, sends_in_window),
        /// Stores a fresh link's and code's verifiers if `nonce` is the row's and unused.
        request_arm(address_digest, nonce, link_verifier, code_verifier, expires_at),
        /// Uses the live link or code whose verifier matches: one row changes, or none.
        request_redeem_link(address_digest, link_verifier, now),
        /// As `request_redeem_link`, by the code's verifier.
        request_redeem_code(address_digest, code_verifier, now),
        /// Counts a wrong code.
        request_wrong_code(address_digest, wrong_codes),
        /// Locks the request: its link and code stop working.
        request_lock(address_digest),
        /// Returns `user_id` of the user an external identity is linked to.
        link_find(issuer, subject),
        /// Links an external identity to a user.
        link_insert(issuer, subject, user_id, now),
        /// Records a sign-in through a link.
        link_seen(issuer, subject, now),
        /// Makes the source's row if it has none (nothing counted yet).
        source_ensure(source_digest, now),
        /// Returns `window_started_at, sends_in_window, wrong_codes`, locked for this
        /// transaction where the dialect locks rows.
        source_find(source_digest),
        /// Writes the source's window and counts.
        source_set(source_digest, window_started_at, sends_in_window, wrong_codes),
        /// Returns `n`: the mails counted in the send windows started after `since`.
        sends_since(since),
        /// Records an ID token as used until it expires: one row, or none if it was used.
        token_spend(token_digest, expires_at),
    }
}
