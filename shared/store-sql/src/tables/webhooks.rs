//! `WebhookSql`: the slots of the webhook receipt role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_webhook_receipts`.
    pub struct WebhookSql {
        /// Write a receipt unless its source and key have one; returns `id` when it wrote.
        claim: Claim(
            id: String,
            source: String,
            event_key: String,
            action: String,
            request_id: String,
            received_at: DateTime<Utc>,
            signed_at: Option<DateTime<Utc>>,
            headers: String,
            body: Vec<u8>,
        ),
        /// Delete at most `limit` receipts of `source` received before `cutoff`.
        expire: Expire(source: String, cutoff: DateTime<Utc>, limit: i64),
        /// Returns the receipt ([`Receipt`]'s columns) of a source and key.
        get: Get(source: String, event_key: String),
    }
}
