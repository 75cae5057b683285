//! Cancelling a run at an operator's request (`jadpo runs cancel`, the console's Cancel): the
//! same transition a run's owner makes over HTTP, committed with the operator action that
//! records who asked and why.
//!
//! Why one transaction: the cancellation, its events and commands (compensations), and the
//! operator action commit together or not at all, so the operator actions log never shows a
//! cancellation that did not happen nor misses one that did. The transition is guarded by the
//! revision read just before (optimistic concurrency); a run that moved meanwhile is read again,
//! a few times, as an owner's unguarded cancel is.

use jadpo_core::model::operator::OperatorAction;
use jadpo_core::ports::TransitionError;
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::TransitionWrite;
use jadpo_workflow::state::ExecutionState;
use serde_json::json;

use super::base::now_ms;
use super::runs::{EngineError, enqueue_commands, find_run, run_graph};
use crate::context::Engine;
use crate::operate::{Change, Operator};

/// How many times a cancel is tried when the run moves between its read and its commit.
const TRIES: usize = 5;

/// Cancels run `run_id` as `operator`, for `reason` (which must not be blank), recording the
/// action `run.cancel` with the run as it was. Compensations of completed steps follow, latest
/// first, as for any cancel. Refused (nothing written) when the run is missing, parked, or
/// already finished.
pub async fn cancel_as_operator(
    engine: &Engine,
    operator: &Operator,
    run_id: &str,
    reason: &str,
) -> Result<ExecutionState, EngineError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(EngineError::NoReason);
    }
    let mut tried = 0;
    loop {
        tried += 1;
        match cancel_once(engine, operator, run_id, reason).await {
            Err(EngineError::Transition(TransitionError::StaleRevision { .. }))
                if tried < TRIES => {}
            other => return other,
        }
    }
}

async fn cancel_once(
    engine: &Engine,
    operator: &Operator,
    run_id: &str,
    reason: &str,
) -> Result<ExecutionState, EngineError> {
    let (store_name, state) = find_run(engine, run_id).await?;
    let def = run_graph(engine, &state).map_err(EngineError::Parked)?;
    let incoming = Incoming::Cancel { reason: reason.to_owned() };
    let t = decide(def, Some(&state), &incoming, run_id, now_ms(engine))?;
    let store = engine.store(&store_name)?;
    let owner = store.execution_owner(run_id).await?;
    let mut change = Change::begin(store.as_ref(), operator, engine.clock.as_ref()).await?;
    let result = async {
        let write = TransitionWrite {
            owner: None,
            actor: None,
            run_id,
            expected_revision: Some(state.revision),
            transition: &t,
            session: None,
            lease: None,
        };
        store.write_transition_in(change.tx(), &write).await?;
        let action = OperatorAction {
            action: "run.cancel",
            item_kind: "run",
            item: run_id,
            item_state: json!({
                "workflow": state.workflow_id, "version": state.workflow_version,
                "status": state.status.as_str(), "revision": state.revision, "owner": owner,
            }),
            detail: Some(reason.to_owned()),
        };
        change.record(&action).await?;
        Ok::<_, EngineError>(())
    }
    .await;
    change.finish(result).await?;
    enqueue_commands(engine, &store_name, run_id, &t.commands).await;
    Ok(t.state)
}
