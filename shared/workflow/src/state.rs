//! The materialized execution state and the events that build it.
//!
//! [`apply`] is the only way state changes: the kernel decides events and folds them in with
//! `apply`, and replaying a run's events from the start with `apply` reaches the same state, by
//! construction. It needs no workflow definition, so old runs replay without their graph.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The eight execution statuses of the specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Created, not started.
    Pending,
    /// Executing; a command may be in flight.
    Running,
    /// Waiting for an external event.
    Waiting,
    /// Cancellation requested; compensations running.
    Cancelling,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled, compensations done.
    Cancelled,
    /// A compensation failed.
    CancellationFailed,
}

impl ExecutionStatus {
    /// The value stored in `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Cancelling => "cancelling",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::CancellationFailed => "cancellation_failed",
        }
    }

    /// Every status, live ones first.
    pub const ALL: [Self; 8] = [
        Self::Pending,
        Self::Running,
        Self::Waiting,
        Self::Cancelling,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::CancellationFailed,
    ];

    /// Parses [`ExecutionStatus::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether the run can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled | Self::CancellationFailed)
    }
}

/// One durable fact of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEvent {
    /// Run-scoped sequence number, from 1.
    pub seq: u64,
    /// Event type (`run.started`, `command.completed`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    /// Details.
    pub payload: Value,
    /// Unix epoch milliseconds.
    pub timestamp: i64,
}

impl RuntimeEvent {
    /// The event's durable id, `${runId}:${seq}`.
    pub fn id(&self, run_id: &str) -> String {
        format!("{run_id}:{}", self.seq)
    }

    /// What `workflow_events.payload` holds: the complete serialized event (`seq`, `type`,
    /// `payload`, `timestamp`), as the storage contract asks; the row's own `seq`, `type` and
    /// `timestamp` columns keep them queryable.
    pub fn stored(&self) -> Value {
        json!({"seq": self.seq, "type": self.event_type, "payload": self.payload,
               "timestamp": self.timestamp})
    }

    /// Reads a stored event in either form: the complete serialized event (its `seq` and
    /// `type` those of the row) or, from rows written before it, the event's inner payload alone.
    pub fn from_stored(seq: u64, event_type: &str, stored: Value, timestamp: i64) -> Self {
        let payload = match stored {
            Value::Object(mut whole) if is_whole(&whole, seq, event_type) => {
                whole.remove("payload").unwrap_or(Value::Null)
            }
            inner => inner,
        };
        Self { seq, event_type: event_type.to_owned(), payload, timestamp }
    }

    /// Whether a stored payload is in the complete form (see [`RuntimeEvent::stored`]).
    pub fn is_stored_whole(&self, stored: &Value) -> bool {
        stored.as_object().is_some_and(|o| is_whole(o, self.seq, &self.event_type))
    }
}

fn is_whole(stored: &Map<String, Value>, seq: u64, event_type: &str) -> bool {
    stored.contains_key("payload")
        && stored.get("seq").and_then(Value::as_u64) == Some(seq)
        && stored.get("type").and_then(Value::as_str) == Some(event_type)
}

/// The materialized state of a run (`workflow_executions`; SQLite's `state_json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionState {
    pub run_id: String,
    pub workflow_id: String,
    /// Graph version.
    pub workflow_version: String,
    pub status: ExecutionStatus,
    /// The node the run is at.
    pub current_node_id: Option<String>,
    /// OCC token: the last durable event's sequence number.
    pub revision: u64,
    /// Immutable input.
    pub input: Value,
    /// Accumulated data (node outputs by key).
    pub data: Map<String, Value>,
    /// Terminal error, if any.
    pub error: Option<Value>,
    /// Compensation context while cancelling: reason, steps remaining, the one in flight.
    pub cancellation_state: Option<Value>,
    /// Iteration counters of repeat nodes, by node.
    pub loop_state: Option<Map<String, Value>>,
    /// Creation time (ms).
    pub created_at: i64,
    /// Last update (ms).
    pub updated_at: i64,
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

/// Folds one event into the state (`None` before `run.started`).
pub fn apply(
    run_id: &str,
    state: Option<ExecutionState>,
    event: &RuntimeEvent,
) -> Option<ExecutionState> {
    let p = &event.payload;
    let mut s = match (state, event.event_type.as_str()) {
        (None, "run.started") => ExecutionState {
            run_id: run_id.to_owned(),
            workflow_id: text(p, "workflow_id"),
            workflow_version: text(p, "workflow_version"),
            status: ExecutionStatus::Running,
            current_node_id: None,
            revision: 0,
            input: p["input"].clone(),
            data: Map::new(),
            error: None,
            cancellation_state: None,
            loop_state: None,
            created_at: event.timestamp,
            updated_at: event.timestamp,
        },
        (None, _) => return None,
        (Some(s), _) => s,
    };
    match event.event_type.as_str() {
        "node.entered" => {
            s.current_node_id = Some(text(p, "node"));
            if s.status != ExecutionStatus::Cancelling {
                s.status = if p["kind"] == "wait" {
                    ExecutionStatus::Waiting
                } else {
                    ExecutionStatus::Running
                };
            }
        }
        "command.issued" if p["compensation"] == true => {
            if let Some(Value::Object(c)) = s.cancellation_state.as_mut() {
                c.insert("in_flight".to_owned(), p["node"].clone());
            }
        }
        "command.completed" | "event.received" => {
            s.data.insert(text(p, "output"), p["result"].clone());
        }
        "loop.iterated" => {
            s.loop_state
                .get_or_insert_with(Map::new)
                .insert(text(p, "node"), p["iteration"].clone());
        }
        "loop.finished" => {
            if let Some(loops) = s.loop_state.as_mut() {
                loops.remove(&text(p, "node"));
            }
        }
        "run.completed" => s.status = ExecutionStatus::Completed,
        "run.failed" => {
            s.status = ExecutionStatus::Failed;
            s.error = Some(p["error"].clone());
        }
        "cancel.requested" => {
            s.status = ExecutionStatus::Cancelling;
            s.cancellation_state = Some(
                json!({"reason": p["reason"], "remaining": p["remaining"], "in_flight": null}),
            );
        }
        "compensation.completed" => {
            if let Some(Value::Object(c)) = s.cancellation_state.as_mut() {
                if let Some(Value::Array(remaining)) = c.get_mut("remaining") {
                    remaining.retain(|n| n != &p["node"]);
                }
                c.insert("in_flight".to_owned(), Value::Null);
            }
        }
        "run.cancelled" => s.status = ExecutionStatus::Cancelled,
        "run.cancellation_failed" => {
            s.status = ExecutionStatus::CancellationFailed;
            s.error = Some(p["error"].clone());
        }
        _ => {}
    }
    s.revision = event.seq;
    s.updated_at = event.timestamp;
    Some(s)
}

/// Replays `events` from the start.
pub fn replay(run_id: &str, events: &[RuntimeEvent]) -> Option<ExecutionState> {
    events.iter().fold(None, |state, e| apply(run_id, state, e))
}
