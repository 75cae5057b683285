//! The commit path: one action, one transaction, with its events, deliveries and idempotency
//! record.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use jadpo_core::app::{Emitted, HandlerContext, HandlerError};
use jadpo_core::id::new_id;
use jadpo_core::model::delivery::{NewDelivery, NewEvent, QueuedDelivery};
use jadpo_core::model::principal::Principal;
use jadpo_core::{Store, StoreError, Transaction};

use crate::context::Engine;

/// One request to run an action.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    pub action: String,
    /// The request's JSON body.
    pub input: Value,
    /// Who is calling (the service key's service): the idempotency scope.
    pub caller: String,
    /// The principal the request acts for, as the action sees it (`None`: a request open to
    /// anyone that carried no credential, or the runtime itself).
    pub principal: Option<Principal>,
    /// The `Idempotency-Key` header, if any.
    pub idempotency_key: Option<String>,
    pub request_digest: String,
    /// W3C trace context of the request.
    pub traceparent: Option<String>,
    /// W3C `tracestate`.
    pub tracestate: Option<String>,
    /// The request's id (for logs and the outbox).
    pub request_id: String,
}

/// What the caller is answered, and what to put on the queue now.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitOutcome {
    /// HTTP status.
    pub status: u16,
    /// JSON body.
    pub body: Value,
    /// Whether this is a stored response replayed for a repeated idempotency key.
    pub replayed: bool,
    /// The store holding the new deliveries, and the deliveries to enqueue at once.
    pub deliveries: Vec<QueuedDelivery>,
    /// The action's store.
    pub store: String,
}

/// Why an action did not commit. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// No action has that name (`404`).
    #[error("no action named {0:?}")]
    UnknownAction(String),
    /// The idempotency key was used for a different request (`422`).
    #[error("Idempotency-Key {0:?} was already used with a different request")]
    KeyReused(String),
    /// The action rejected its input (`4xx`).
    #[error("{title}: {detail}")]
    Rejected {
        /// HTTP status.
        status: u16,
        title: String,
        detail: String,
    },
    /// The action emitted an event the application does not declare (`500`, a bug).
    #[error("action {action:?} emitted event {event:?}, which is not declared")]
    UndeclaredEvent { action: String, event: String },
    /// A chain of events went deeper than the limit.
    #[error(
        "event chain depth {depth} exceeds the limit of {limit}; the event {event:?} was refused"
    )]
    ChainTooDeep { event: String, depth: u32, limit: u32 },
    /// The action failed (`500`).
    #[error("action failed: {0}")]
    Failed(String),
    /// The database failed (`503` when retryable, `409` on a conflict, else `500`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The digest idempotency compares: SHA-256 over the method, the path and the body's canonical
/// JSON, so the same request sent with other spacing or key order is the same request.
pub fn request_digest(method: &str, path: &str, body: &Value) -> String {
    let mut canonical = String::new();
    canonical_json(body, &mut canonical);
    let mut hash = Sha256::new();
    for part in [method, "\n", path, "\n", canonical.as_str()] {
        hash.update(part.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` written with no whitespace and every object's keys in byte order; strings and numbers
/// as `serde_json` writes them (so `1` and `1.0` stay different numbers).
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Runs `request` in one transaction on its action's store.
pub async fn commit(p: &Engine, request: CommitRequest) -> Result<CommitOutcome, CommitError> {
    let spec = p
        .app
        .action(&request.action)
        .ok_or_else(|| CommitError::UnknownAction(request.action.clone()))?;
    let store = p.store(&spec.store)?;
    let now = p.clock.now();
    let mut tx = store.begin().await?;
    if let Some(key) = &request.idempotency_key {
        let retention = chrono::Duration::from_std(p.settings.idempotency_retention)
            .unwrap_or(chrono::Duration::days(1));
        let stored = store
            .idempotency_claim(
                tx.as_mut(),
                &request.caller,
                key,
                &request.request_digest,
                now,
                now + retention,
            )
            .await;
        match stored {
            Ok(None) => {}
            Ok(Some(stored)) => {
                tx.rollback().await?;
                if stored.request_digest != request.request_digest {
                    return Err(CommitError::KeyReused(key.clone()));
                }
                let body = serde_json::from_str(&stored.body).unwrap_or(Value::String(stored.body));
                let store = spec.store.clone();
                return Ok(CommitOutcome {
                    status: stored.status,
                    body,
                    replayed: true,
                    deliveries: Vec::new(),
                    store,
                });
            }
            Err(e) => return Err(abort(tx, e.into()).await),
        }
    }
    match run_action(p, store.as_ref(), tx.as_mut(), &request, now).await {
        Ok((status, body, deliveries)) => {
            tx.commit().await?;
            crate::fault!("commit.after_commit");
            Ok(CommitOutcome {
                status,
                body,
                replayed: false,
                deliveries,
                store: spec.store.clone(),
            })
        }
        Err(e) => Err(abort(tx, e).await),
    }
}

async fn abort(tx: Box<dyn Transaction>, error: CommitError) -> CommitError {
    // The error that stopped the action is the one to report; a failed rollback ends the
    // transaction anyway (the adapter closes the connection).
    let _ = tx.rollback().await;
    error
}

async fn run_action(
    p: &Engine,
    store: &dyn Store,
    tx: &mut dyn Transaction,
    request: &CommitRequest,
    now: DateTime<Utc>,
) -> Result<(u16, Value, Vec<QueuedDelivery>), CommitError> {
    let spec = p
        .app
        .action(&request.action)
        .ok_or_else(|| CommitError::UnknownAction(request.action.clone()))?;
    crate::fault!("commit.after_claim");
    let audited = p.app.has_audited(&spec.store);
    if audited {
        // The acting principal (`service:web`, `user:<id>`); the caller string for the runtime's
        // own requests, which have none.
        let actor =
            request.principal.as_ref().map_or_else(|| request.caller.clone(), Principal::owner);
        let who = jadpo_core::model::audit::AuditContext {
            actor: &actor,
            action: &request.action,
            request_id: Some(&request.request_id),
            trace: request.traceparent.as_deref(),
            now,
        };
        store.audit_set_context(tx, &who).await?;
    }
    let mut ctx =
        HandlerContext::new(tx, p.connections.as_ref(), now, request.idempotency_key.clone())
            .with_flags(p.flag_access(&spec.store))
            .with_principal(request.principal.as_ref());
    let output = spec.handler.run(&mut ctx, request.input.clone()).await.map_err(|e| match e {
        HandlerError::Rejected { status, title, detail } => {
            CommitError::Rejected { status, title, detail }
        }
        HandlerError::Store(e) => CommitError::Store(e),
        HandlerError::Failed(why) => CommitError::Failed(why),
    })?;
    let emitted = ctx.into_emitted();
    crate::fault!("commit.after_action");
    let origin = Origin {
        source: &request.action,
        depth: 0,
        request_id: Some(&request.request_id),
        traceparent: request.traceparent.as_deref(),
        tracestate: request.tracestate.as_deref(),
    };
    let (_, deliveries) = write_emitted(p, store, tx, &emitted, &origin, now).await?;
    crate::fault!("commit.after_outbox");
    if let Some(key) = &request.idempotency_key {
        store
            .idempotency_store_response(
                tx,
                &request.caller,
                key,
                output.status,
                &output.body.to_string(),
            )
            .await?;
    }
    if audited {
        store.audit_clear_context(tx).await?;
    }
    crate::fault!("commit.before_commit");
    Ok((output.status, output.body, deliveries))
}

/// Where emitted events come from.
pub(crate) struct Origin<'a> {
    pub(crate) source: &'a str,
    pub(crate) depth: u32,
    pub(crate) request_id: Option<&'a str>,
    pub(crate) traceparent: Option<&'a str>,
    pub(crate) tracestate: Option<&'a str>,
}

/// Writes the outbox row and deliveries of each emitted event inside `tx`; returns the outbox
/// rows' ids, in order, and the deliveries to put on the queue after commit.
pub(crate) async fn write_emitted(
    p: &Engine,
    store: &dyn Store,
    tx: &mut dyn Transaction,
    emitted: &[Emitted],
    origin: &Origin<'_>,
    now: DateTime<Utc>,
) -> Result<(Vec<String>, Vec<QueuedDelivery>), CommitError> {
    let mut queued = Vec::new();
    let mut outbox_ids = Vec::with_capacity(emitted.len());
    for e in emitted {
        if !p.app.has_event(&e.event_type) {
            return Err(CommitError::UndeclaredEvent {
                action: origin.source.to_owned(),
                event: e.event_type.clone(),
            });
        }
        if origin.depth > p.settings.max_chain_depth {
            return Err(CommitError::ChainTooDeep {
                event: e.event_type.clone(),
                depth: origin.depth,
                limit: p.settings.max_chain_depth,
            });
        }
        let event = NewEvent {
            id: new_id(p.clock.as_ref()).to_string(),
            event_type: e.event_type.clone(),
            payload: e.payload.clone(),
            traceparent: origin.traceparent.map(str::to_owned),
            tracestate: origin.tracestate.map(str::to_owned),
            chain_depth: origin.depth,
            source: origin.source.to_owned(),
            request_id: origin.request_id.map(str::to_owned),
            created_at: now,
        };
        let deliveries: Vec<NewDelivery> = p
            .app
            .subscribers_of(&e.event_type)
            .map(|s| NewDelivery {
                id: new_id(p.clock.as_ref()).to_string(),
                outbox_id: event.id.clone(),
                subscriber: s.name.clone(),
                created_at: now,
            })
            .collect();
        store.outbox_append(tx, &event, &deliveries).await?;
        outbox_ids.push(event.id.clone());
        queued.extend(
            deliveries
                .into_iter()
                .map(|d| QueuedDelivery { id: d.id, traceparent: event.traceparent.clone() }),
        );
    }
    Ok((outbox_ids, queued))
}

#[cfg(test)]
mod tests {
    use super::request_digest;

    fn parsed(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn digests_differ_by_method_path_and_body() {
        let body = parsed(r#"{"a": 1, "b": [1, {"d": "x", "c": null}]}"#);
        let base = request_digest("POST", "/actions/a", &body);
        assert_eq!(base.len(), 64);
        assert_eq!(base, request_digest("POST", "/actions/a", &body));
        assert_ne!(base, request_digest("POST", "/actions/b", &body));
        assert_ne!(base, request_digest("PUT", "/actions/a", &body));
        for other in [
            r#"{"a": 2, "b": [1, {"d": "x", "c": null}]}"#,
            r#"{"a": 1, "b": [{"d": "x", "c": null}, 1]}"#,
            r#"{"a": 1.0, "b": [1, {"d": "x", "c": null}]}"#,
            r#"{"a": 1, "b": [1, {"d": "x"}]}"#,
            r#"{"a": "1", "b": [1, {"d": "x", "c": null}]}"#,
        ] {
            assert_ne!(base, request_digest("POST", "/actions/a", &parsed(other)), "{other}");
        }
    }

    #[test]
    fn the_same_json_spaced_or_ordered_otherwise_has_the_same_digest() {
        let base = request_digest("POST", "/a", &parsed(r#"{"a":1,"b":[1,{"c":null,"d":"x"}]}"#));
        for same in [
            r#"{ "b" : [ 1 , { "d" : "x" , "c" : null } ] , "a" : 1 }"#,
            "{\n  \"a\": 1,\n  \"b\": [1, {\"d\": \"\\u0078\", \"c\": null}]\n}",
        ] {
            assert_eq!(base, request_digest("POST", "/a", &parsed(same)), "{same}");
        }
    }
}
