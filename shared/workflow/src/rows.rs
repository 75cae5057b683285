//! The rows the workflow store reads and writes around a transition: the write itself (under a
//! Session, under a lease), why it was refused, Sessions, commands, and the exported forms.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use serde_json::Value;

use crate::kernel::Transition;
use crate::state::{ExecutionState, ExecutionStatus, RuntimeEvent};

/// A run as exported: its state, events and commands (leases are not exported: they belong to
/// the processes of the source, which are stopped).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunExport {
    /// The materialized state.
    pub state: ExecutionState,
    /// Every event, in `seq` order.
    pub events: Vec<RuntimeEvent>,
    /// Every command, with its status and times (Unix ms).
    pub commands: Vec<Value>,
    /// The principal that owns the run (absent in exports from before owners were recorded).
    #[serde(default)]
    pub owner: Option<String>,
    /// Who made each event that a principal made, by `seq` (`service:<name>`, `user:<id>`);
    /// events the runtime made itself (a step's completion) have none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub actors: BTreeMap<u64, String>,
    /// The ids of events written before ids were `${runId}:${seq}`, by `seq`: kept as they are
    /// through an export and import (an event absent here has the current form).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub event_ids: BTreeMap<u64, String>,
}

impl RunExport {
    /// The stored id of event `event`: its legacy id when it has one, else `${runId}:${seq}`.
    pub fn event_id(&self, event: &RuntimeEvent) -> String {
        self.event_ids.get(&event.seq).cloned().unwrap_or_else(|| event.id(&self.state.run_id))
    }

    /// Whether every event has a current-form id (a history the revision rule applies to).
    pub fn is_new_format(&self) -> bool {
        self.event_ids.is_empty() && !self.events.is_empty()
    }

    /// What of this run would not fit PostgreSQL's columns (`VARCHAR(n)` widths, `INTEGER`
    /// ranges), each said with its value's length: checked before an import writes anything, so
    /// an import into PostgreSQL does not stop part-way on a value SQLite took.
    pub fn over_postgres_limits(&self) -> Vec<String> {
        let s = &self.state;
        let mut over = Limits::new(format!("run {:?}", s.run_id));
        over.text("run_id", &s.run_id, ID);
        over.text("workflow_id", &s.workflow_id, ID);
        over.text("workflow_version", &s.workflow_version, SHORT);
        over.text("status", s.status.as_str(), SHORT);
        over.opt("current_node_id", s.current_node_id.as_deref(), ID);
        over.opt("owner", self.owner.as_deref(), ID);
        over.int("revision", s.revision);
        for e in &self.events {
            over.text("event id", &self.event_id(e), ID);
            over.text("event type", &e.event_type, TYPE);
            over.int("event seq", e.seq);
        }
        for actor in self.actors.values() {
            over.text("event actor", actor, ID);
        }
        for c in &self.commands {
            let field = |k: &str| c[k].as_str().map(str::to_owned);
            over.opt("command id", field("id").as_deref(), ID);
            over.opt("command node_id", field("node_id").as_deref(), ID);
            over.opt("command type", field("type").as_deref(), TYPE);
            over.opt("command status", field("status").as_deref(), SHORT);
            over.opt("command idempotency_key", field("idempotency_key").as_deref(), ID);
            over.int("command seq", c["seq"].as_u64().unwrap_or(0));
        }
        over.found
    }
}

/// PostgreSQL's widths for the workflow store's text columns: ids and keys, types, statuses and
/// versions.
const ID: usize = 255;
const TYPE: usize = 100;
const SHORT: usize = 50;

/// What does not fit, collected for one run or Session.
struct Limits {
    of: String,
    found: Vec<String>,
}

impl Limits {
    fn new(of: String) -> Self {
        Self { of, found: Vec::new() }
    }

    fn text(&mut self, column: &str, value: &str, max: usize) {
        let chars = value.chars().count();
        if chars > max {
            self.found.push(format!(
                "{}: {column} has {chars} characters, over PostgreSQL's {max}",
                self.of
            ));
        }
    }

    fn opt(&mut self, column: &str, value: Option<&str>, max: usize) {
        if let Some(value) = value {
            self.text(column, value, max);
        }
    }

    fn int(&mut self, column: &str, value: u64) {
        if i32::try_from(value).is_err() {
            self.found.push(format!("{}: {column} {value} is over PostgreSQL's INTEGER", self.of));
        }
    }
}

impl SessionExport {
    /// What of this Session would not fit PostgreSQL's columns (see
    /// [`RunExport::over_postgres_limits`]).
    pub fn over_postgres_limits(&self) -> Vec<String> {
        let mut over = Limits::new(format!("session {:?}", self.id));
        over.text("id", &self.id, ID);
        over.text("user_id", &self.user_id, ID);
        over.opt("active_run_id", self.active_run_id.as_deref(), ID);
        over.opt("owner", self.owner.as_deref(), ID);
        over.found
    }
}

/// The newest durable fact a store holds: what an operator records as the recovered revision
/// and time after a restore.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryPoint {
    /// The run of the newest event.
    pub run_id: String,
    /// Its `seq`: that run's recovered revision.
    pub revision: i64,
    /// Its time, Unix ms.
    pub at_ms: i64,
    /// How many runs the store holds.
    pub runs: i64,
    /// How many events the store holds.
    pub events: i64,
}

/// What deleting a run removed with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RunDeleted {
    /// Its events.
    pub events: u64,
    /// Its commands (their dispatch rows with them).
    pub commands: u64,
    /// The Sessions that were bound to it, now bound to no run.
    pub sessions_unbound: u64,
}

/// A Session as exported.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SessionExport {
    /// Id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    pub context: Value,
    /// Bound run.
    pub active_run_id: Option<String>,
    pub revision: i64,
    pub context_revision: i64,
    /// Created (Unix ms).
    pub created_at: i64,
    /// Updated (Unix ms).
    pub updated_at: i64,
    /// The principal that owns the Session (absent in exports from before owners were recorded).
    #[serde(default)]
    pub owner: Option<String>,
}

/// The Session half of a transition that starts a run in a Session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionWrite {
    pub session_id: String,
    /// Who must own it.
    pub user_id: String,
    /// The Session revision the caller read.
    pub expected_revision: i64,
}

/// The lease a transition is written under: the write is refused unless it is still live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseFence {
    /// The lease's id (issued at acquisition).
    pub lease_id: String,
    /// The writer's clock, Unix ms.
    pub now_ms: i64,
    /// What the write does to the lease besides checking it; rolled back with the write.
    pub end: LeaseEnd,
}

/// What a transition written under a lease does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseEnd {
    /// Nothing: the lease is checked (and locked where the dialect can) and kept as it is.
    Hold,
    /// Kept and renewed to `expires_at` (Unix ms): the executor goes on with the run's next
    /// command without giving the run up, so no other executor takes it in between.
    Renew {
        /// The new expiry.
        expires_at: i64,
    },
    /// Ended (its row deleted) in the write's transaction: an executor whose work on the run is
    /// done saves the separate release.
    Release,
}

/// A lease on a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionLease {
    pub run_id: String,
    /// The holder.
    pub worker_id: String,
    /// The fencing token.
    pub lease_id: String,
    /// Expiry, Unix ms.
    pub expires_at: i64,
}

/// One transition to commit.
#[derive(Debug, Clone)]
pub struct TransitionWrite<'a> {
    pub run_id: &'a str,
    /// The revision the transition was decided on; `None` for a new run.
    pub expected_revision: Option<u64>,
    /// What the kernel decided.
    pub transition: &'a Transition,
    /// A Session to bind the run to (a start in a Session).
    pub session: Option<SessionWrite>,
    /// The lease the writer holds, if it writes under one.
    pub lease: Option<LeaseFence>,
    /// For a new run, the principal that creates it (`Principal::owner`), written with it.
    pub owner: Option<&'a str>,
    /// The principal making this change (`Principal::owner`), written with each of its events;
    /// `None` when the runtime makes it (a command's completion).
    pub actor: Option<&'a str>,
}

/// A Session row.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// Id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// Application context.
    pub context: Value,
    /// The most recently bound run.
    pub active_run_id: Option<String>,
    /// CAS token of every Session mutation.
    pub revision: i64,
    /// Advances only when the context changes.
    pub context_revision: i64,
    /// The principal that created it (`Principal::owner`); `None` for a Session from before
    /// owners were recorded, which no principal reaches over HTTP.
    pub owner: Option<String>,
}

/// A command row, as the delivery side reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRow {
    /// Id.
    pub id: String,
    pub run_id: String,
    /// The issuing node.
    pub node_id: String,
    /// The capability.
    pub command_type: String,
    pub payload: Value,
    /// `pending`, `completed`, `failed`.
    pub status: String,
    /// The provider's idempotency key.
    pub idempotency_key: Option<String>,
}

/// Which runs an operator's page shows, newest first (run ids are time-ordered UUIDv7s, so the
/// id is the keyset: a page costs the same however many runs there are).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only this status.
    pub status: Option<ExecutionStatus>,
    /// Only runs of this workflow.
    pub workflow: Option<String>,
    /// Only runs of this owner (`service:<name>` or `user:<id>`).
    pub owner: Option<String>,
    /// Only runs with an id before this one: the last of the page before.
    pub before: Option<String>,
    /// At most this many.
    pub limit: u32,
}

/// A run as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The run.
    pub run_id: String,
    /// Its workflow and version.
    pub workflow_id: String,
    /// The version it runs on.
    pub workflow_version: String,
    /// Where it stands.
    pub status: ExecutionStatus,
    /// Its revision (the last event's seq).
    pub revision: u64,
    /// The node it is at.
    pub current_node: Option<String>,
    /// Who owns it.
    pub owner: Option<String>,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}
