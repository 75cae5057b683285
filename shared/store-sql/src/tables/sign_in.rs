//! `SignInSql`: the slots of the sign-in request role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// The statements an adapter supplies for `jadpo_sign_in_requests` and `jadpo_sign_in_links`.
    pub struct SignInSql {
        /// Makes the address's row if it has none (no send counted, nothing live); a row that
        /// exists is left as it is.
        request_ensure: RequestEnsure(address_digest: String, now: DateTime<Utc>),
        /// Returns the address's row (`nonce`, `window_started_at`, `sends_in_window`,
        /// `code_verifier`, `wrong_codes`, `expires_at`, `used_at`), locked for this transaction
        /// where the dialect locks rows.
        request_find: RequestFind(address_digest: String),
        /// Counts a send and starts a new request: the old link and code stop working.
        request_renew: RequestRenew(
            address_digest: String,
            nonce: String,
            now: DateTime<Utc>,
            window_started_at: DateTime<Utc>,
            sends_in_window: i64,
        ),
        /// Stores a fresh link's and code's verifiers if `nonce` is the row's and unused.
        request_arm: RequestArm(
            address_digest: String,
            nonce: String,
            link_verifier: String,
            code_verifier: String,
            expires_at: DateTime<Utc>,
        ),
        /// Uses the live link or code whose verifier matches: one row changes, or none.
        request_redeem_link: RequestRedeemLink(
            address_digest: String,
            link_verifier: String,
            now: DateTime<Utc>,
        ),
        /// As `request_redeem_link`, by the code's verifier.
        request_redeem_code: RequestRedeemCode(
            address_digest: String,
            code_verifier: String,
            now: DateTime<Utc>,
        ),
        /// Counts a wrong code.
        request_wrong_code: RequestWrongCode(address_digest: String, wrong_codes: i64),
        /// Locks the request: its link and code stop working.
        request_lock: RequestLock(address_digest: String),
        /// Returns `user_id` of the user an external identity is linked to.
        link_find: LinkFind(issuer: String, subject: String),
        /// Links an external identity to a user.
        link_insert: LinkInsert(
            issuer: String,
            subject: String,
            user_id: String,
            now: DateTime<Utc>,
        ),
        /// Records a sign-in through a link.
        link_seen: LinkSeen(issuer: String, subject: String, now: DateTime<Utc>),
        /// Makes the source's row if it has none (nothing counted yet).
        source_ensure: SourceEnsure(source_digest: String, now: DateTime<Utc>),
        /// Returns `window_started_at, sends_in_window, wrong_codes`, locked for this
        /// transaction where the dialect locks rows.
        source_find: SourceFind(source_digest: String),
        /// Writes the source's window and counts.
        source_set: SourceSet(
            source_digest: String,
            window_started_at: DateTime<Utc>,
            sends_in_window: i64,
            wrong_codes: i64,
        ),
        /// Returns `n`: the mails counted in the send windows started after `since`.
        sends_since: SendsSince(since: DateTime<Utc>),
        /// Records an ID token as used until it expires: one row, or none if it was used.
        token_spend: TokenSpend(token_digest: String, expires_at: DateTime<Utc>),
    }
}
