//! Workflow definitions: an immutable graph with an id and a version.
//!
//! Nodes run a capability (an environmental command, with an optional compensation), wait for an
//! external event, branch on data, repeat a body a bounded number of times, or complete. A
//! definition is checked when it is built: every edge names a node, the start exists, and
//! repeat bodies come back to their repeat node.

use serde_json::Value;
use std::collections::BTreeMap;

/// One node of the graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Issue a command to a capability and wait for its result.
    Capability {
        /// The capability (command type) to run, e.g. `charge`.
        capability: String,
        /// Data keys copied into the command's payload (with the run's input under `input`).
        inputs: Vec<String>,
        /// Template of the provider's idempotency key: `{run_id}`, `{node}` and `{data.KEY}`
        /// are replaced.
        idempotency_key: Option<String>,
        /// The data key the result is stored under.
        output: String,
        /// The next node.
        next: String,
        /// Where to go when the command fails; `None` fails the run.
        on_failure: Option<String>,
        /// The capability that undoes this one when the run is cancelled after it completed.
        compensate: Option<String>,
    },
    /// Wait for an external event of one type.
    Wait {
        /// The event type.
        event: String,
        /// The data key the event's payload is stored under.
        output: String,
        /// The next node.
        next: String,
    },
    /// Go to `then` when `data[key] == equals`, else to `otherwise`.
    Branch {
        /// The data key compared.
        key: String,
        /// The value it is compared with.
        equals: Value,
        /// The node when equal.
        then: String,
        /// The node otherwise.
        otherwise: String,
    },
    /// Run `body` `times` times (the body leads back here), then go to `next`.
    Repeat {
        /// Iterations.
        times: u32,
        /// The first node of the body.
        body: String,
        /// The node after the last iteration.
        next: String,
    },
    /// The run is complete.
    Complete,
}

impl Node {
    fn edges(&self) -> Vec<&str> {
        match self {
            Self::Capability { next, on_failure, .. } => {
                let mut e = vec![next.as_str()];
                e.extend(on_failure.as_deref());
                e
            }
            Self::Wait { next, .. } => vec![next.as_str()],
            Self::Branch { then, otherwise, .. } => vec![then.as_str(), otherwise.as_str()],
            Self::Repeat { body, next, .. } => vec![body.as_str(), next.as_str()],
            Self::Complete => Vec::new(),
        }
    }
}

/// Why a definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// A node points at a node that does not exist.
    #[error("workflow {workflow:?}: node {node:?} leads to {missing:?}, which does not exist")]
    UnknownNode {
        workflow: String,
        /// The node with the edge.
        node: String,
        /// The missing target.
        missing: String,
    },
    /// The start node does not exist.
    #[error("workflow {0:?}: the start node does not exist")]
    NoStart(String),
    /// A node id is used twice.
    #[error("workflow {workflow:?}: node {node:?} is declared twice")]
    Duplicate { workflow: String, node: String },
    /// A name longer than the column that stores it (the same limit on both adapters, so a
    /// definition SQLite would take does not stall a run on PostgreSQL).
    #[error(
        "workflow {workflow:?}: {what} {value:?} has {len} characters, over the {max} its column \
         holds"
    )]
    TooLong {
        workflow: String,
        /// What the name is (node id, capability, event type, workflow id).
        what: &'static str,
        /// The name.
        value: String,
        /// Its length in characters.
        len: usize,
        /// The column's width.
        max: usize,
    },
    /// A repeat's body never leads back to it.
    #[error("workflow {workflow:?}: the body of repeat node {node:?} never leads back to it")]
    OpenLoop {
        workflow: String,
        /// The repeat node.
        node: String,
    },
}

/// An immutable workflow graph.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowDef {
    id: String,
    version: String,
    start: String,
    nodes: BTreeMap<String, Node>,
}

impl WorkflowDef {
    /// Starts a definition of `id` at `version`, beginning at node `start`.
    pub fn builder(id: &str, version: &str, start: &str) -> WorkflowBuilder {
        WorkflowBuilder {
            def: WorkflowDef {
                id: id.to_owned(),
                version: version.to_owned(),
                start: start.to_owned(),
                nodes: BTreeMap::new(),
            },
            duplicate: None,
        }
    }

    /// The workflow's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The graph's version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The start node.
    pub fn start(&self) -> &str {
        &self.start
    }

    /// The node called `id`.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// Every node, by id.
    pub fn nodes(&self) -> impl Iterator<Item = (&String, &Node)> {
        self.nodes.iter()
    }

    /// Every capability the graph uses (steps and compensations).
    pub fn capabilities(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for node in self.nodes.values() {
            if let Node::Capability { capability, compensate, .. } = node {
                out.push(capability.as_str());
                out.extend(compensate.as_deref());
            }
        }
        out
    }
}

/// Builds a [`WorkflowDef`].
#[derive(Debug)]
pub struct WorkflowBuilder {
    def: WorkflowDef,
    duplicate: Option<String>,
}

impl WorkflowBuilder {
    /// Adds node `id`.
    #[must_use]
    pub fn node(mut self, id: &str, node: Node) -> Self {
        if self.def.nodes.insert(id.to_owned(), node).is_some() && self.duplicate.is_none() {
            self.duplicate = Some(id.to_owned());
        }
        self
    }

    /// Checks the graph.
    pub fn build(self) -> Result<WorkflowDef, DefinitionError> {
        let def = self.def;
        let workflow = def.id.clone();
        if let Some(node) = self.duplicate {
            return Err(DefinitionError::Duplicate { workflow, node });
        }
        if !def.nodes.contains_key(&def.start) {
            return Err(DefinitionError::NoStart(workflow));
        }
        check_widths(&def)?;
        for (id, node) in &def.nodes {
            if let Some(missing) = node.edges().into_iter().find(|e| !def.nodes.contains_key(*e)) {
                return Err(DefinitionError::UnknownNode {
                    workflow,
                    node: id.clone(),
                    missing: missing.to_owned(),
                });
            }
            if let Node::Repeat { body, .. } = node {
                if !reaches(&def, body, id) {
                    return Err(DefinitionError::OpenLoop { workflow, node: id.clone() });
                }
            }
        }
        Ok(def)
    }
}

/// The widths of the columns a definition's names are written to (`workflow_executions`,
/// `workflow_commands`, `workflow_events`); the version's is checked where it is declared. A
/// command's resolved idempotency key is kept in a column of `ID_WIDTH` too, checked by the
/// kernel when it resolves it.
pub(crate) const ID_WIDTH: usize = 255;
const TYPE_WIDTH: usize = 100;

/// Refuses a name longer than the column it is written to.
fn check_widths(def: &WorkflowDef) -> Result<(), DefinitionError> {
    let mut names = vec![("workflow id", def.id.as_str(), ID_WIDTH)];
    for (id, node) in &def.nodes {
        names.push(("node id", id.as_str(), ID_WIDTH));
        match node {
            Node::Capability { capability, compensate, .. } => {
                names.push(("capability", capability.as_str(), TYPE_WIDTH));
                names.extend(compensate.as_deref().map(|c| ("capability", c, TYPE_WIDTH)));
            }
            Node::Wait { event, .. } => names.push(("event type", event.as_str(), TYPE_WIDTH)),
            _ => {}
        }
    }
    let over = names.into_iter().find(|(_, value, max)| value.chars().count() > *max);
    match over {
        Some((what, value, max)) => Err(DefinitionError::TooLong {
            workflow: def.id.clone(),
            what,
            value: value.to_owned(),
            len: value.chars().count(),
            max,
        }),
        None => Ok(()),
    }
}

fn reaches(def: &WorkflowDef, from: &str, target: &str) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(id) = stack.pop() {
        if id == target {
            return true;
        }
        if !seen.insert(id.clone()) {
            continue;
        }
        if let Some(node) = def.nodes.get(&id) {
            stack.extend(node.edges().into_iter().map(str::to_owned));
        }
    }
    false
}
