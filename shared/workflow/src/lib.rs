//! Jadpo's workflows as pure data and decisions: immutable graphs ([`def`]), the pure kernel that
//! advances a run ([`kernel`]), the materialized state with the events that build it ([`state`]),
//! and the rows a workflow store reads and writes around a transition ([`rows`]).
//!
//! It sits below `jadpo-core` and depends on no other part of Jadpo, so a workflow can be
//! decided, replayed and tested without a store; core's workflow ports speak its types.
//!
//! A transition is decided by [`kernel::decide`] from the current state and one incoming event;
//! its events are folded into the next state with [`state::apply`], the same function replay
//! uses, so replaying a run's events from the start reaches the materialized state exactly.
//! Compensation on cancel runs, latest first, the compensating capability of every completed
//! step that declares one (a step counts as completed when its output is in the data).

pub mod def;
pub mod kernel;
pub mod rows;
pub mod state;

pub use def::{DefinitionError, Node, WorkflowDef};
pub use kernel::{CommandAck, Incoming, KernelError, NewCommand, Transition, decide};
pub use rows::{
    CommandRow, ExecutionLease, LeaseEnd, LeaseFence, RunExport, SessionExport, SessionRecord,
    SessionWrite, TransitionWrite,
};
pub use state::{ExecutionState, ExecutionStatus, RuntimeEvent, apply, replay};

#[cfg(test)]
mod tests;
