//! Webhook receipts: the record that a provider's event was received, unique per source and
//! event key (the key taken from signed material only), written in the transaction of the action
//! it fed, so that the receipt, the action's writes and its events commit together or not at
//! all. A second request with the same key finds the receipt and changes nothing.

use chrono::{DateTime, Utc};

/// A receipt, to write or as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The receipt's own id.
    pub id: String,
    /// The declared source it came through.
    pub source: String,
    /// What it is deduplicated by.
    pub event_key: String,
    /// The action it fed, and that action's request id.
    pub action: String,
    pub request_id: String,
    pub received_at: DateTime<Utc>,
    /// When the provider signed it, where its scheme signs a time.
    pub signed_at: Option<DateTime<Utc>>,
    /// The request's headers as a JSON object, without credential headers.
    pub headers: String,
    /// The body exactly as received.
    pub body: Vec<u8>,
}
