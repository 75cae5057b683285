//! One webhook request received: checked against its source before any database work (its size,
//! then its signature, time and key: [`super::verify`]), then, in one transaction on the store of
//! the action the source feeds, the receipt claimed for its key, the action run on the event, its
//! writes and events written; then the events' deliveries sent. A request whose key has a receipt
//! already is answered with that receipt and changes nothing, however many arrive at once: the
//! receipt's unique key makes the second transaction wait for the first and then find it.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use jadpo_application::WebhookSource;
use jadpo_core::id::new_id;
use jadpo_core::model::webhook::Receipt;

use super::verify::{Request, Secret, Verified, VerifyError, verify};
use crate::commit::{CommitError, CommitRequest, commit_received, request_digest};
use crate::context::Engine;

/// Headers never kept on a receipt: they carry credentials, not the event.
const CREDENTIAL_HEADERS: &[&str] =
    &["authorization", "cookie", "proxy-authorization", "x-api-key", "x-amz-security-token"];

/// A request as it arrived at `POST /webhooks/{source}`, with the source's secrets.
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    pub source: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
    pub secrets: &'a [Secret],
}

/// What the sender is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Received {
    /// The event's receipt (`200`): written now, or, when `duplicate`, kept from an earlier
    /// request with the same key (nothing ran this time).
    Receipt { body: Value, duplicate: bool },
    /// A URL-verification handshake (Slack's): answer `challenge`; nothing is written.
    Challenge(String),
}

/// Why a request was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    /// No source of that name is declared (`404`).
    #[error("no webhook source named {0:?}")]
    UnknownSource(String),
    /// The body is over the source's limit (`413`).
    #[error("the body is {size} bytes; source {source_name:?} takes at most {limit}")]
    TooLarge { source_name: String, size: usize, limit: usize },
    /// The request did not prove it came from the source (`400`).
    #[error(transparent)]
    Refused(#[from] VerifyError),
    /// The action refused the event or could not run (its own status).
    #[error(transparent)]
    Commit(#[from] CommitError),
}

impl From<jadpo_core::StoreError> for ReceiveError {
    fn from(e: jadpo_core::StoreError) -> Self {
        Self::Commit(CommitError::Store(e))
    }
}

/// Receives `incoming`.
pub async fn receive(engine: &Engine, incoming: Incoming<'_>) -> Result<Received, ReceiveError> {
    let source = engine
        .app
        .webhook(incoming.source)
        .ok_or_else(|| ReceiveError::UnknownSource(incoming.source.to_owned()))?;
    if incoming.body.len() > source.body_limit {
        return Err(ReceiveError::TooLarge {
            source_name: source.name.clone(),
            size: incoming.body.len(),
            limit: source.body_limit,
        });
    }
    let now = engine.clock.now();
    let request = Request { headers: incoming.headers, body: incoming.body };
    let tolerance = chrono::Duration::from_std(source.tolerance).unwrap_or(chrono::Duration::MAX);
    let verified = verify(&source.scheme, incoming.secrets, &request, now, tolerance)?;
    crate::fault!("webhooks.after_verify");
    if let Some(challenge) = verified.challenge {
        return Ok(Received::Challenge(challenge));
    }
    // A copy is answered from its receipt without running the action; the claim in the action's
    // transaction still decides a race between copies.
    let store = engine.app.action(&source.action).map(|a| a.store.as_str());
    let store = engine.store(store.unwrap_or_else(|| engine.app.default_store()))?;
    if let Some(kept) = store.receipt_get(&source.name, &verified.key).await? {
        return Ok(Received::Receipt { body: crate::commit::received(&kept), duplicate: true });
    }
    let receipt = receipt(engine, source, &incoming, &verified, now);
    let commit = CommitRequest {
        action: source.action.clone(),
        input: envelope(source, &receipt, incoming.body),
        caller: format!("webhook:{}", source.name),
        principal: None,
        idempotency_key: None,
        request_digest: request_digest("POST", &format!("/webhooks/{}", source.name), &json!({})),
        traceparent: None,
        tracestate: None,
        request_id: receipt.request_id.clone(),
    };
    let outcome = commit_received(engine, commit, &receipt).await?;
    crate::fault!("webhooks.after_commit");
    let body = if outcome.replayed { outcome.body } else { crate::commit::received(&receipt) };
    Ok(Received::Receipt { body, duplicate: outcome.replayed })
}

/// The receipt a verified request gets, if its key has none yet. Its request id is the same for
/// every request of the key, so that the action's recorded calls, if it makes any, are the same
/// run's on a retry.
fn receipt(
    engine: &Engine,
    source: &WebhookSource,
    incoming: &Incoming<'_>,
    verified: &Verified,
    now: DateTime<Utc>,
) -> Receipt {
    let key_digest = crate::digest::sha256_hex(verified.key.as_bytes());
    let headers: serde_json::Map<String, Value> = incoming
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .filter(|(n, _)| !CREDENTIAL_HEADERS.contains(&n.as_str()))
        .map(|(n, v)| (n, Value::String(v.clone())))
        .collect();
    Receipt {
        id: new_id(engine.clock.as_ref()).to_string(),
        source: source.name.clone(),
        event_key: verified.key.clone(),
        action: source.action.clone(),
        request_id: format!("webhook:{}:{}", source.name, &key_digest[..32]),
        received_at: now,
        signed_at: verified.signed_at,
        headers: Value::Object(headers).to_string(),
        body: incoming.body.to_vec(),
    }
}

/// What the action is given: the source, the event's key and receipt, and the body, as JSON
/// where it is JSON, else as text.
fn envelope(source: &WebhookSource, receipt: &Receipt, body: &[u8]) -> Value {
    let payload = serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    json!({
        "source": source.name,
        "event_key": receipt.event_key,
        "receipt": receipt.id,
        "signed_at": receipt.signed_at.map(|t| t.to_rfc3339()),
        "payload": payload,
    })
}
