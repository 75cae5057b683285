//! Workflows: immutable graphs ([`def`]), the pure kernel that advances a run ([`kernel`]), and
//! the materialized state with the events that build it ([`state`]).
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
    SessionWrite, TransitionError, TransitionWrite,
};
pub use state::{ExecutionState, ExecutionStatus, RuntimeEvent, apply, replay};

#[cfg(test)]
mod tests;
