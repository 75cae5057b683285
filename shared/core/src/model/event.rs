//! Events: what an action or subscriber emits inside its transaction ([`Emitted`]), and what a
//! subscriber receives once it is stored and delivered ([`Event`]).

use chrono::{DateTime, Utc};
use serde_json::Value;

/// An event emitted inside a transaction, before it is given an id and written to the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    /// The declared event type, e.g. `order.placed`.
    pub event_type: String,
    /// Its JSON payload.
    pub payload: Value,
}

/// An event as a subscriber receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The outbox row's id.
    pub id: String,
    pub event_type: String,
    pub payload: Value,
    /// How deep in a chain of events it is (0 for one emitted by a request).
    pub chain_depth: u32,
    /// When it was emitted.
    pub created_at: DateTime<Utc>,
}
