//! Rows of the event pipeline: the outbox rows and deliveries written at commit, a delivery as
//! read back with its event, the outcome of an attempt, and stored idempotent responses.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::event::Event;

/// The `encoding` written with every outbox payload: JSON text, UTF-8.
pub const ENCODING_JSON_V1: i64 = crate::model::encoding::JSON_TEXT.number as i64;

/// An outbox row to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Row id (UUIDv7).
    pub id: String,
    pub event_type: String,
    pub payload: Value,
    /// W3C `traceparent` of the request or delivery that emitted it.
    pub traceparent: Option<String>,
    /// W3C `tracestate`.
    pub tracestate: Option<String>,
    /// 0 for a request's event, parent + 1 for a subscriber's.
    pub chain_depth: u32,
    /// The action or subscriber that emitted it.
    pub source: String,
    /// The request id (or the delivery id that emitted it).
    pub request_id: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A delivery row to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    /// Row id (UUIDv7).
    pub id: String,
    /// The outbox row.
    pub outbox_id: String,
    pub subscriber: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Waiting to be (re)attempted.
    Pending,
    /// The subscriber's effect is committed.
    Handled,
    /// Failed its last attempt, or can never succeed.
    Dead,
    /// An operator discarded it.
    Discarded,
}

impl DeliveryStatus {
    /// The value in `jadpo_deliveries.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Handled => "handled",
            Self::Dead => "dead",
            Self::Discarded => "discarded",
        }
    }

    /// Parses [`DeliveryStatus::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Handled, Self::Dead, Self::Discarded]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A delivery with its event, as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Row id.
    pub id: String,
    pub subscriber: String,
    pub status: DeliveryStatus,
    /// Attempts made.
    pub attempts: u32,
    /// When it is next due.
    pub next_attempt_at: DateTime<Utc>,
    /// When it was last put on the queue.
    pub enqueued_at: Option<DateTime<Utc>>,
    /// When it was last attempted.
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// Why the last attempt failed.
    pub last_failure: Option<String>,
    /// When it ended (handled, dead, discarded).
    pub finished_at: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// The event delivered.
    pub event: Event,
    /// W3C `traceparent` of the emitting request.
    pub traceparent: Option<String>,
    /// W3C `tracestate` of the emitting request, passed on with `traceparent` to the events
    /// its subscriber emits.
    pub tracestate: Option<String>,
    /// The circuit breaker holding it, if one does: pending, but not attempted until the
    /// breaker lets it through or an operator releases it.
    pub held: Option<Held>,
    /// Why its event cannot be read: its payload is kept in an encoding this build does not
    /// read (the event's payload is then `null`). Such a delivery fails its attempts with this
    /// message, and a build that reads it delivers it.
    pub unreadable: Option<String>,
}

impl Delivery {
    /// The breaker holding it now: only a pending delivery is held (a row an older build
    /// discarded while held keeps its hold's columns, and is not shown as held).
    pub fn held_now(&self) -> Option<&Held> {
        self.held.as_ref().filter(|_| self.status == DeliveryStatus::Pending)
    }
}

/// A delivery held by an open circuit breaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The connection whose breaker holds it.
    pub connection: String,
    /// Since when.
    pub since: DateTime<Utc>,
}

/// What a delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The subscriber's effect is committed.
    Handled,
    /// It failed; retry at `retry_at`, or never (`None`: the delivery is dead).
    Failed {
        /// Why, for operators.
        failure: String,
        /// When to try again.
        retry_at: Option<DateTime<Utc>>,
    },
    /// It was not attempted (another runner holds its run, a crashed one's lease not ended
    /// yet): due again at `until`, with its attempts unchanged, so that waiting for a lease never
    /// spends the attempts a subscriber's own failures are counted against.
    Deferred {
        /// Why, for operators.
        reason: String,
        /// When it is due again.
        until: DateTime<Utc>,
    },
}

/// Which deliveries to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryFilter {
    /// Only this status.
    pub status: Option<DeliveryStatus>,
    /// Only this subscriber.
    pub subscriber: Option<String>,
    /// At most this many, newest first.
    pub limit: u32,
}

/// One page of deliveries, newest first: the filters, and where the page before it ended.
/// Read by keyset (`created_at`, `id`), so a page costs the same however many deliveries
/// there are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryQuery {
    /// Only this status.
    pub status: Option<DeliveryStatus>,
    /// Only this subscriber.
    pub subscriber: Option<String>,
    /// Only deliveries of this event type.
    pub event_type: Option<String>,
    /// Only deliveries an open circuit breaker holds for this connection.
    pub held_by: Option<String>,
    /// Only deliveries created at or after this.
    pub created_from: Option<DateTime<Utc>>,
    /// Only deliveries created before this.
    pub created_to: Option<DateTime<Utc>>,
    /// Only deliveries older than this one (`created_at`, `id`): the last of the page before.
    pub before: Option<(DateTime<Utc>, String)>,
    /// At most this many.
    pub limit: u32,
}

/// Where a store's deliveries stand, each count capped (a count at the cap reads "at least").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliverySummary {
    /// Per status, how many (up to the cap).
    pub counts: Vec<(DeliveryStatus, u64)>,
    /// How many died since the time asked (up to the cap).
    pub dead_since: u64,
    /// When the oldest pending delivery was created.
    pub oldest_pending: Option<DateTime<Utc>>,
    /// The cap each count stops at.
    pub cap: u64,
}

/// Dead deliveries of one subscriber that failed alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadGroup {
    /// The subscriber.
    pub subscriber: String,
    /// Their last failure.
    pub failure: Option<String>,
    /// How many.
    pub count: u64,
    /// When the latest of them died.
    pub newest: Option<DateTime<Utc>>,
}

/// A stored idempotent response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The digest of the request that produced it.
    pub request_digest: String,
    /// HTTP status.
    pub status: u16,
    /// Body (JSON text).
    pub body: String,
}

/// A delivery claimed for the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedDelivery {
    /// Its id.
    pub id: String,
    /// The emitting request's W3C `traceparent`, carried as a message attribute.
    pub traceparent: Option<String>,
}
