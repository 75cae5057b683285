//! The pure kernel: from the current state and one validated incoming event, the new events,
//! the next state and the commands to issue. No I/O, no clock (the time is a parameter), so a
//! transition can be computed, tested and replayed anywhere.

use serde_json::{Map, Value, json};

use crate::def::{ID_WIDTH, Node, WorkflowDef};
use crate::state::{ExecutionState, ExecutionStatus, RuntimeEvent, apply};

/// What happened to a run, as the kernel is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Start the run with `input`.
    Start {
        /// The run's input.
        input: Value,
    },
    /// A command finished.
    CommandCompleted {
        command_id: String,
        /// The node that issued it (from the command row).
        node_id: String,
        result: Value,
    },
    /// A command failed.
    CommandFailed {
        command_id: String,
        /// The node that issued it.
        node_id: String,
        /// Why.
        error: String,
    },
    /// An external event arrived.
    External { event_type: String, payload: Value },
    /// Cancel the run (compensating completed steps).
    Cancel {
        /// Why.
        reason: String,
    },
}

/// A command to insert in `outbox_commands` with the transition.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCommand {
    /// Row id: `${runId}:cmd:${seq}`.
    pub id: String,
    /// The sequence of the event that issued it.
    pub seq: u64,
    /// The issuing node.
    pub node_id: String,
    /// The capability (command type).
    pub command_type: String,
    pub payload: Value,
    /// The provider's idempotency key, resolved from the node's template.
    pub idempotency_key: Option<String>,
}

/// An acknowledgement of a finished command, written with the transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAck {
    pub command_id: String,
    /// `completed` or `failed`.
    pub status: &'static str,
}

/// What a transition writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// New durable events, in order.
    pub events: Vec<RuntimeEvent>,
    /// The state after them.
    pub state: ExecutionState,
    /// Commands to insert.
    pub commands: Vec<NewCommand>,
    /// Commands to acknowledge.
    pub acks: Vec<CommandAck>,
}

/// Why the kernel refused an incoming event; nothing is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// The event does not fit the run's current state.
    #[error("{0}")]
    Unexpected(String),
    /// The run is finished.
    #[error("run is {0}; it accepts no more events")]
    Terminal(&'static str),
    /// The definition does not match the run.
    #[error("{0}")]
    Definition(String),
    /// A transition entered too many nodes (a loop without a wait).
    #[error("the transition entered more than {0} nodes without waiting")]
    Runaway(usize),
}

const MAX_STEPS: usize = 256;

struct Builder<'a> {
    def: &'a WorkflowDef,
    run_id: &'a str,
    now: i64,
    state: Option<ExecutionState>,
    events: Vec<RuntimeEvent>,
    commands: Vec<NewCommand>,
    acks: Vec<CommandAck>,
    steps: usize,
}

impl<'a> Builder<'a> {
    fn seq(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.revision) + 1
    }

    fn push(&mut self, event_type: &str, payload: Value) -> u64 {
        let event = RuntimeEvent {
            seq: self.seq(),
            event_type: event_type.to_owned(),
            payload,
            timestamp: self.now,
        };
        self.state = apply(self.run_id, self.state.take(), &event);
        let seq = event.seq;
        self.events.push(event);
        seq
    }

    fn st(&self) -> Result<&ExecutionState, KernelError> {
        self.state
            .as_ref()
            .ok_or_else(|| KernelError::Unexpected("the run has not started".to_owned()))
    }

    fn node(&self, id: &str) -> Result<&'a Node, KernelError> {
        self.def.node(id).ok_or_else(|| {
            KernelError::Definition(format!("workflow {:?} has no node {id:?}", self.def.id()))
        })
    }

    fn issue(
        &mut self,
        node: &str,
        capability: &str,
        payload: Value,
        key: Option<String>,
        compensation: bool,
    ) {
        let seq = self.seq();
        let id = format!("{}:cmd:{seq}", self.run_id);
        let event = json!({
            "command_id": id, "node": node, "capability": capability,
            "payload": payload, "idempotency_key": key, "compensation": compensation,
        });
        self.push("command.issued", event);
        self.commands.push(NewCommand {
            id,
            seq,
            node_id: node.to_owned(),
            command_type: capability.to_owned(),
            payload,
            idempotency_key: key,
        });
    }

    fn enter(&mut self, id: &str) -> Result<(), KernelError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(KernelError::Runaway(MAX_STEPS));
        }
        let node = self.node(id)?;
        let kind = if matches!(node, Node::Wait { .. }) { "wait" } else { "step" };
        self.push("node.entered", json!({"node": id, "kind": kind}));
        match node {
            Node::Capability { capability, inputs, idempotency_key, .. } => {
                let st = self.st()?;
                let mut payload = Map::new();
                payload.insert("input".to_owned(), st.input.clone());
                for key in inputs {
                    payload.insert(key.clone(), st.data.get(key).cloned().unwrap_or(Value::Null));
                }
                let key = idempotency_key.as_deref().map(|t| resolve(t, self.run_id, id, &st.data));
                if let Some(error) = key.as_deref().and_then(|k| key_too_long(id, k)) {
                    // Never issued: the store could not keep the key, and the command would be
                    // retried forever. The run fails at this node, saying why.
                    self.push("run.failed", json!({"error": {"node": id, "message": error}}));
                    return Ok(());
                }
                self.issue(id, capability, Value::Object(payload), key, false);
                Ok(())
            }
            Node::Wait { .. } => Ok(()),
            Node::Branch { key, equals, then, otherwise } => {
                let taken = if self.st()?.data.get(key) == Some(equals) { then } else { otherwise };
                self.enter(taken)
            }
            Node::Repeat { times, body, next } => {
                let done = self
                    .st()?
                    .loop_state
                    .as_ref()
                    .and_then(|l| l.get(id))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                if done < u64::from(*times) {
                    self.push("loop.iterated", json!({"node": id, "iteration": done + 1}));
                    self.enter(body)
                } else {
                    self.push("loop.finished", json!({"node": id}));
                    self.enter(next)
                }
            }
            Node::Complete => {
                self.push("run.completed", json!({}));
                Ok(())
            }
        }
    }

    /// Compensable steps done so far, latest first: capability nodes with a compensation whose
    /// output is in the data, in the order the graph reaches them from the start.
    fn compensable(&self) -> Result<Vec<String>, KernelError> {
        let data = &self.st()?.data;
        let mut order = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![self.def.start().to_owned()];
        while let Some(id) = stack.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let node = self.node(&id)?;
            if let Node::Capability { compensate: Some(_), output, .. } = node {
                if data.contains_key(output) {
                    order.push(id.clone());
                }
            }
            let mut next: Vec<String> = match node {
                Node::Capability { next, on_failure, .. } => {
                    std::iter::once(next).chain(on_failure).cloned().collect()
                }
                Node::Wait { next, .. } => vec![next.clone()],
                Node::Branch { then, otherwise, .. } => vec![then.clone(), otherwise.clone()],
                Node::Repeat { body, next, .. } => vec![body.clone(), next.clone()],
                Node::Complete => Vec::new(),
            };
            next.reverse();
            stack.extend(next);
        }
        order.reverse();
        Ok(order)
    }

    fn continue_cancel(&mut self) -> Result<(), KernelError> {
        let remaining = self
            .st()?
            .cancellation_state
            .as_ref()
            .and_then(|c| c["remaining"].as_array().cloned())
            .unwrap_or_default();
        let Some(next) = remaining.first().and_then(Value::as_str).map(str::to_owned) else {
            self.push("run.cancelled", json!({}));
            return Ok(());
        };
        let Node::Capability { compensate: Some(capability), output, .. } = self.node(&next)?
        else {
            return Err(KernelError::Definition(format!("node {next:?} has no compensation")));
        };
        let st = self.st()?;
        let payload = json!({"input": st.input, "result": st.data.get(output).cloned().unwrap_or(Value::Null)});
        let key = Some(format!("{}:compensate:{next}", self.run_id));
        self.issue(&next, capability, payload, key, true);
        Ok(())
    }
}

/// Why a resolved idempotency key cannot be kept: longer than its column, on every adapter
/// alike (PostgreSQL's column would refuse it, SQLite's would not).
fn key_too_long(node: &str, key: &str) -> Option<String> {
    let chars = key.chars().count();
    (chars > ID_WIDTH).then(|| {
        format!(
            "the idempotency key node {node:?} resolved is {chars} characters long; a key may \
             have at most {ID_WIDTH}: shorten its template or the data it takes in"
        )
    })
}

fn resolve(template: &str, run_id: &str, node: &str, data: &Map<String, Value>) -> String {
    let mut out = template.replace("{run_id}", run_id).replace("{node}", node);
    for (key, value) in data {
        let shown = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        out = out.replace(&format!("{{data.{key}}}"), &shown);
    }
    out
}

/// Decides the transition for `incoming` on a run in `current` (`None` before it starts).
pub fn decide(
    def: &WorkflowDef,
    current: Option<&ExecutionState>,
    incoming: &Incoming,
    run_id: &str,
    now_ms: i64,
) -> Result<Transition, KernelError> {
    let mut b = Builder {
        def,
        run_id,
        now: now_ms,
        state: current.cloned(),
        events: Vec::new(),
        commands: Vec::new(),
        acks: Vec::new(),
        steps: 0,
    };
    if let Some(st) = current {
        if st.workflow_id != def.id() || st.workflow_version != def.version() {
            return Err(KernelError::Definition(format!(
                "run {run_id} belongs to {}@{}, not {}@{}",
                st.workflow_id,
                st.workflow_version,
                def.id(),
                def.version()
            )));
        }
        if st.status.is_terminal() {
            return Err(KernelError::Terminal(st.status.as_str()));
        }
    }
    match incoming {
        Incoming::Start { input } => {
            if current.is_some() {
                return Err(KernelError::Unexpected(format!("run {run_id} has already started")));
            }
            b.push(
                "run.started",
                json!({"workflow_id": def.id(), "workflow_version": def.version(), "input": input}),
            );
            b.enter(def.start())?;
        }
        Incoming::CommandCompleted { command_id, node_id, result } => {
            completed(&mut b, command_id, node_id, result)?
        }
        Incoming::CommandFailed { command_id, node_id, error } => {
            failed(&mut b, command_id, node_id, error)?
        }
        Incoming::External { event_type, payload } => {
            let st = b.st()?;
            let node_id = st.current_node_id.clone().unwrap_or_default();
            match b.node(&node_id)? {
                Node::Wait { event, output, next }
                    if st.status == ExecutionStatus::Waiting && event == event_type =>
                {
                    b.push("event.received", json!({"node": node_id, "event_type": event_type, "output": output, "result": payload}));
                    b.enter(next)?;
                }
                _ => {
                    return Err(KernelError::Unexpected(format!(
                        "run {run_id} is {} at {node_id:?} and does not wait for {event_type:?}",
                        st.status.as_str()
                    )));
                }
            }
        }
        Incoming::Cancel { reason } => {
            let st = b.st()?;
            if st.status == ExecutionStatus::Cancelling {
                return Err(KernelError::Unexpected(format!(
                    "run {run_id} is already being cancelled"
                )));
            }
            let in_flight = st.status == ExecutionStatus::Running;
            let remaining = b.compensable()?;
            b.push("cancel.requested", json!({"reason": reason, "remaining": remaining}));
            if !in_flight {
                b.continue_cancel()?;
            }
        }
    }
    let state = b.state.ok_or_else(|| KernelError::Unexpected("no state".to_owned()))?;
    Ok(Transition { events: b.events, state, commands: b.commands, acks: b.acks })
}

fn compensation_in_flight(st: &ExecutionState) -> Option<String> {
    st.cancellation_state.as_ref().and_then(|c| c["in_flight"].as_str()).map(str::to_owned)
}

fn completed(
    b: &mut Builder<'_>,
    command_id: &str,
    node_id: &str,
    result: &Value,
) -> Result<(), KernelError> {
    let st = b.st()?.clone();
    if st.status == ExecutionStatus::Cancelling
        && compensation_in_flight(&st).as_deref() == Some(node_id)
    {
        b.acks.push(CommandAck { command_id: command_id.to_owned(), status: "completed" });
        b.push(
            "compensation.completed",
            json!({"command_id": command_id, "node": node_id, "result": result}),
        );
        return b.continue_cancel();
    }
    let Node::Capability { output, next, .. } = b.node(node_id)? else {
        return Err(KernelError::Unexpected(format!("node {node_id:?} issues no commands")));
    };
    let running_here = matches!(st.status, ExecutionStatus::Running | ExecutionStatus::Cancelling)
        && st.current_node_id.as_deref() == Some(node_id)
        && compensation_in_flight(&st).is_none();
    if !running_here {
        return Err(KernelError::Unexpected(format!(
            "run {} is {} at {:?}; a completion of {node_id:?} does not fit",
            b.run_id,
            st.status.as_str(),
            st.current_node_id
        )));
    }
    b.acks.push(CommandAck { command_id: command_id.to_owned(), status: "completed" });
    b.push(
        "command.completed",
        json!({"command_id": command_id, "node": node_id, "output": output, "result": result}),
    );
    if st.status == ExecutionStatus::Cancelling {
        // Cancelled while this step was in flight: it completed, so it is compensated too.
        let reason = st.cancellation_state.as_ref().map_or(Value::Null, |c| c["reason"].clone());
        let remaining = b.compensable()?;
        b.push("cancel.requested", json!({"reason": reason, "remaining": remaining}));
        return b.continue_cancel();
    }
    b.enter(next)
}

fn failed(
    b: &mut Builder<'_>,
    command_id: &str,
    node_id: &str,
    error: &str,
) -> Result<(), KernelError> {
    let st = b.st()?.clone();
    b.acks.push(CommandAck { command_id: command_id.to_owned(), status: "failed" });
    if st.status == ExecutionStatus::Cancelling {
        if compensation_in_flight(&st).as_deref() == Some(node_id) {
            b.push(
                "command.failed",
                json!({"command_id": command_id, "node": node_id, "error": error}),
            );
            b.push(
                "run.cancellation_failed",
                json!({"error": format!("compensating {node_id} failed: {error}")}),
            );
            return Ok(());
        }
        b.push(
            "command.failed",
            json!({"command_id": command_id, "node": node_id, "error": error}),
        );
        return b.continue_cancel();
    }
    let Node::Capability { on_failure, .. } = b.node(node_id)? else {
        return Err(KernelError::Unexpected(format!("node {node_id:?} issues no commands")));
    };
    if st.status != ExecutionStatus::Running || st.current_node_id.as_deref() != Some(node_id) {
        return Err(KernelError::Unexpected(format!(
            "a failure of {node_id:?} does not fit run {}",
            b.run_id
        )));
    }
    b.push("command.failed", json!({"command_id": command_id, "node": node_id, "error": error}));
    match on_failure {
        Some(target) => b.enter(target),
        None => {
            b.push("run.failed", json!({"error": {"node": node_id, "message": error}}));
            Ok(())
        }
    }
}
