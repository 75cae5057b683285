//! The workflow engine: the use cases that turn requests and command results into committed
//! transitions, and carry commands across processes.
//!
//! Every transition is: read the run, let the pure kernel decide, commit under OCC (and, for a
//! command result, under the run's execution lease), then put the new commands on the queue.
//! Commands travel like deliveries — immediate send after commit, relay sweeps for those never
//! sent or lost (`jadpo_command_dispatch`), the delivery side runs the capability and commits its
//! result as the next transition. A crash anywhere leaves the run resumable: the command stays
//! `pending` until a transition acknowledges it.

use serde_json::Value;

use jadpo_application::{CapabilityContext, CommandRequest, HandlerError};
use jadpo_core::model::principal::Principal;
use jadpo_core::ports::TransitionError;
use jadpo_core::{Store, StoreError};
use jadpo_workflow::def::WorkflowDef;
use jadpo_workflow::kernel::{Incoming, NewCommand, decide};
use jadpo_workflow::rows::{CommandRow, LeaseEnd, LeaseFence, TransitionWrite};
use jadpo_workflow::state::{ExecutionState, RuntimeEvent};

use super::base::now_ms;
pub use super::base::{EngineError, InSession};
pub use super::commands::enqueue_commands;
use super::commands::send_commands;
use crate::context::Engine;

/// What became of a command message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandResult {
    /// The capability ran and its result was committed.
    Committed,
    /// The command was already acknowledged, or its run ended.
    Finished,
    /// The command no longer exists.
    Gone,
    /// The run is parked (its workflow version is not registered here): the command stays
    /// pending, and the relay offers it again every redelivery window, until a deployment that
    /// registers the version runs it.
    Parked(String),
}

/// Why a command could not be handled now; the message should be retried.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Another executor holds the run's lease, or a transition won meanwhile.
    #[error("run {0} is busy; retry later")]
    Busy(String),
    /// The kernel refused the command's result on the run's graph.
    #[error("{0}")]
    Unrunnable(String),
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The graph run `state` advances on: its own workflow version's, never another's. `Err`: the
/// operator message saying why the run is parked.
pub(super) fn run_graph<'a>(
    engine: &'a Engine,
    state: &ExecutionState,
) -> Result<&'a WorkflowDef, String> {
    engine
        .app
        .workflow_version(&state.workflow_id, &state.workflow_version)
        .map(AsRef::as_ref)
        .ok_or_else(|| {
            engine
                .app
                .parked_reason(&state.run_id, &state.workflow_id, &state.workflow_version)
                .unwrap_or_default()
        })
}

/// Why run `state` is parked here, if it is (see [`Application::parked`]).
///
/// [`Application::parked`]: jadpo_application::Application::parked
pub fn parked(engine: &Engine, state: &ExecutionState) -> Option<String> {
    engine.app.parked(state)
}

/// Starting a run lives in `start`; its names stay reachable here, where callers look for them.
pub use super::start::{StartKey, Started, start_run, start_run_once, started_response};

/// Finds a run in the stores holding workflows.
pub async fn find_run(
    engine: &Engine,
    run_id: &str,
) -> Result<(String, ExecutionState), EngineError> {
    for store in engine.app.workflow_stores() {
        if let Some(state) = engine.store(store)?.execution_get(run_id).await? {
            return Ok((store.to_owned(), state));
        }
    }
    Err(EngineError::NotFound(run_id.to_owned()))
}

/// Checks that `principal` owns run `run_id` with one small read per workflow store (the owner
/// column, not the state): [`EngineError::NotFound`] otherwise, so another principal cannot even
/// tell that it exists. The routes that then transition the run read its state once, there.
pub async fn check_owned_run(
    engine: &Engine,
    run_id: &str,
    principal: &Principal,
) -> Result<(), EngineError> {
    for store in engine.app.workflow_stores() {
        let Some(owner) = engine.store(store)?.execution_owner(run_id).await? else { continue };
        if principal.owns(Some(&owner)) {
            return Ok(());
        }
        // Answered as if absent; logged with who asked, never a credential.
        tracing::info!(
            run_id,
            principal = principal.kind(),
            reason = "not the owner",
            "request refused"
        );
        break;
    }
    Err(EngineError::NotFound(run_id.to_owned()))
}

/// Finds run `run_id` for `principal` ([`check_owned_run`], then its state).
pub async fn find_owned_run(
    engine: &Engine,
    run_id: &str,
    principal: &Principal,
) -> Result<(String, ExecutionState), EngineError> {
    check_owned_run(engine, run_id, principal).await?;
    find_run(engine, run_id).await
}

/// A run's events, in `seq` order, each with the principal that made it (`None`: the runtime).
pub async fn run_events(
    engine: &Engine,
    run_id: &str,
) -> Result<Vec<(RuntimeEvent, Option<String>)>, EngineError> {
    let (store, _) = find_run(engine, run_id).await?;
    let store = engine.store(&store)?;
    let mut actors = store.execution_event_actors(run_id).await?;
    let events = store.execution_events(run_id).await?;
    Ok(events
        .into_iter()
        .map(|e| {
            let actor = actors.remove(&e.seq);
            (e, actor)
        })
        .collect())
}

/// At most `limit` of a run's events after `after_seq`, in `seq` order, each with the
/// principal that made it: the bounded read behind `GET /runs/{id}/events`.
pub async fn run_events_page(
    engine: &Engine,
    run_id: &str,
    after_seq: u64,
    limit: u32,
) -> Result<Vec<(RuntimeEvent, Option<String>)>, EngineError> {
    let (store, _) = find_run(engine, run_id).await?;
    Ok(engine.store(&store)?.execution_events_page(run_id, after_seq, limit).await?)
}

/// How many times a transition without an expected revision (a cancellation) is decided again
/// on a run that moved meanwhile before the conflict is handed to the caller: the caller did not
/// ask for a revision, so a command completing at that moment is not its conflict.
const UNGUARDED_TRIES: usize = 5;

async fn transition(
    engine: &Engine,
    run_id: &str,
    expected: Option<u64>,
    incoming: Incoming,
    actor: Option<&Principal>,
) -> Result<ExecutionState, EngineError> {
    let tries = if expected.is_some() { 1 } else { UNGUARDED_TRIES };
    let mut tried = 0;
    loop {
        tried += 1;
        match transition_once(engine, run_id, expected, &incoming, actor).await {
            Err(EngineError::Transition(TransitionError::StaleRevision { .. }))
                if tried < tries => {}
            other => return other,
        }
    }
}

async fn transition_once(
    engine: &Engine,
    run_id: &str,
    expected: Option<u64>,
    incoming: &Incoming,
    actor: Option<&Principal>,
) -> Result<ExecutionState, EngineError> {
    let (store_name, state) = find_run(engine, run_id).await?;
    if let Some(expected) = expected.filter(|e| *e != state.revision) {
        return Err(EngineError::Stale {
            run_id: run_id.to_owned(),
            expected,
            actual: state.revision,
        });
    }
    let def = run_graph(engine, &state).map_err(EngineError::Parked)?;
    let t = decide(def, Some(&state), incoming, run_id, now_ms(engine))?;
    let actor = actor.map(Principal::owner);
    let write = TransitionWrite {
        owner: None,
        actor: actor.as_deref(),
        run_id,
        expected_revision: Some(state.revision),
        transition: &t,
        session: None,
        lease: None,
    };
    crate::fault!("workflow.before_transition_commit");
    engine.store(&store_name)?.commit_transition(&write).await?;
    enqueue_commands(engine, &store_name, run_id, &t.commands).await;
    Ok(t.state)
}

/// Delivers an external event to a run, guarded by the caller's expected revision.
pub async fn post_event(
    engine: &Engine,
    run_id: &str,
    event_type: &str,
    payload: Value,
    expected_revision: u64,
    actor: Option<&Principal>,
) -> Result<ExecutionState, EngineError> {
    let incoming = Incoming::External { event_type: event_type.to_owned(), payload };
    transition(engine, run_id, Some(expected_revision), incoming, actor).await
}

/// Cancels a run; completed steps with a compensation are compensated, latest first.
pub async fn cancel_run(
    engine: &Engine,
    run_id: &str,
    reason: &str,
    actor: Option<&Principal>,
) -> Result<ExecutionState, EngineError> {
    transition(engine, run_id, None, Incoming::Cancel { reason: reason.to_owned() }, actor).await
}

/// One relay sweep over the commands of every store holding workflow runs: those never sent or
/// lost are sent again.
pub async fn relay_commands(engine: &Engine) -> Result<usize, StoreError> {
    let mut sent = 0;
    for name in engine.app.workflow_stores() {
        let Some(store) = engine.stores.get(name) else { continue };
        let now = engine.clock.now();
        let lost_before = jadpo_core::clock::before(now, engine.settings.redelivery_after);
        let ids = store.commands_claim_due(now, lost_before, engine.settings.relay_batch).await?;
        if ids.is_empty() {
            continue;
        }
        crate::fault!("relay.commands.after_claim");
        sent += send_commands(engine, name, &ids).await;
        crate::fault!("relay.commands.after_send");
    }
    Ok(sent)
}

/// Runs the command `command_id` of store `store_name`: its capability, then the transition that
/// records the result, under the run's execution lease.
pub async fn run_command(
    engine: &Engine,
    store_name: &str,
    command_id: &str,
) -> Result<CommandResult, CommandError> {
    let store = engine.store(store_name)?;
    let Some(command) = store.command_get(command_id).await? else {
        return Ok(CommandResult::Gone);
    };
    // `claimed`: a worker of another implementation (or an imported history) took it and
    // did not finish; the run's lease, not the status, keeps two executors apart here, so it
    // is resumed as a pending one is (the capability is called again under the same key).
    if !matches!(command.status.as_str(), "pending" | "claimed") {
        return Ok(CommandResult::Finished);
    }
    let Some(state) = store.execution_get(&command.run_id).await? else {
        return Ok(CommandResult::Gone);
    };
    if state.status.is_terminal() {
        return Ok(CommandResult::Finished);
    }
    let def = match run_graph(engine, &state) {
        Ok(def) => def,
        Err(reason) => {
            tracing::warn!(run_id = command.run_id, command_id, "{reason}");
            return Ok(CommandResult::Parked(reason));
        }
    };
    let worker = format!("pid-{}", std::process::id());
    let start = now_ms(engine);
    let Some(lease) =
        store.run_lease_take(&command.run_id, &worker, start, start + lease_ms(engine)).await?
    else {
        return Err(CommandError::Busy(command.run_id.clone()));
    };
    let run = Leased { store_name, store: store.as_ref(), def, lease_id: &lease.lease_id };
    execute_chain(engine, &run, command, state).await
}

/// Most commands one executor runs back to back on a run it holds, before it gives the run up
/// and queues the next one like any other: a long run does not keep a worker from the rest.
const CHAIN_MAX: usize = 16;

/// Runs `command`, then, while each result leaves exactly one next command, that one too under the
/// same lease (renewed by each result's transition and ended by the last): a run of sequential
/// steps costs one queue message, one load and one lease for all of them. A chain that ends
/// without a committed last result gives the lease up; a command that failed to run behind
/// another (it has no message of its own) is then queued for another try.
async fn execute_chain(
    engine: &Engine,
    run: &Leased<'_>,
    mut command: CommandRow,
    mut state: ExecutionState,
) -> Result<CommandResult, CommandError> {
    let mut ran = 1;
    let outcome = loop {
        let go_on = ran < CHAIN_MAX && !engine.near_deadline();
        match execute(engine, run, &command, state, go_on).await {
            Ok(Executed::Then(next, at)) => (command, state) = (*next, *at),
            Ok(Executed::Done(result)) => break Ok(result),
            Err(e) => break Err(e),
        }
        ran += 1;
    };
    // A committed last result ended the lease in its own transaction.
    if !matches!(outcome, Ok(CommandResult::Committed)) {
        let _ = run.store.run_lease_give_up(&command.run_id, run.lease_id).await;
        if ran > 1 && outcome.is_err() {
            enqueue_commands(engine, run.store_name, &command.run_id, &[continued(&command)]).await;
        }
    }
    outcome
}

/// The queue's view of a command run back to back (its message was never sent).
fn continued(c: &CommandRow) -> NewCommand {
    NewCommand {
        id: c.id.clone(),
        seq: 0,
        node_id: c.node_id.clone(),
        command_type: c.command_type.clone(),
        payload: c.payload.clone(),
        idempotency_key: c.idempotency_key.clone(),
    }
}

/// What became of one command of a chain.
enum Executed {
    /// Finished: the chain ends.
    Done(CommandResult),
    /// Its result committed and left the next command, which this executor runs on the state
    /// that result wrote, still holding the lease.
    Then(Box<CommandRow>, Box<ExecutionState>),
}

/// The one command `t` leaves that the executor of the command it answers goes on with: only
/// when the run is still live and nothing else was started beside it (parallel branches are
/// queued, for other workers).
fn next_in_chain(t: &jadpo_workflow::kernel::Transition, run_id: &str) -> Option<CommandRow> {
    let [c] = t.commands.as_slice() else { return None };
    if t.state.status.is_terminal() {
        return None;
    }
    Some(CommandRow {
        id: c.id.clone(),
        run_id: run_id.to_owned(),
        node_id: c.node_id.clone(),
        command_type: c.command_type.clone(),
        payload: c.payload.clone(),
        status: "pending".into(),
        idempotency_key: c.idempotency_key.clone(),
    })
}

fn lease_ms(engine: &Engine) -> i64 {
    i64::try_from(engine.settings.workflows.run_lease.as_millis()).unwrap_or(i64::MAX)
}

/// How a capability's run ended while its executor held the lease.
enum Held<T> {
    /// It finished.
    Done(T),
    /// The lease expired or was taken over: another executor owns the run now.
    Lost,
    /// It ran past the capability deadline and was stopped.
    TimedOut,
}

/// Runs `work` while renewing the run's lease every third of its length, for at most the
/// capability deadline. A renewal the store fails is tried again at the next tick; one the store
/// refuses (the lease is gone) stops the work.
async fn holding_lease<T>(
    engine: &Engine,
    run: &Leased<'_>,
    run_id: &str,
    work: impl std::future::Future<Output = T>,
) -> Held<T> {
    let every = (engine.settings.workflows.run_lease / 3).max(std::time::Duration::from_millis(1));
    let renew = async {
        let mut tick = tokio::time::interval(every);
        tick.tick().await; // the first tick is now: the lease was just taken
        loop {
            tick.tick().await;
            let now = now_ms(engine);
            crate::fault!("command.before_lease_renewal");
            match run
                .store
                .run_lease_extend(run_id, run.lease_id, now, now + lease_ms(engine))
                .await
            {
                Ok(true) => {}
                Ok(false) => return Ok::<(), StoreError>(()),
                Err(e) => tracing::warn!(run_id, error = %e, "could not renew the run's lease"),
            }
        }
    };
    let deadline = engine.settings.workflows.capability_deadline;
    tokio::select! {
        done = tokio::time::timeout(deadline, work) => match done {
            Ok(value) => Held::Done(value),
            Err(_) => Held::TimedOut,
        },
        _ = renew => Held::Lost,
    }
}

/// One sweep over runs whose executor stopped mid-capability (its lease expired unreleased):
/// each lease is cleared and the run's pending commands are sent again at once, so another
/// executor takes the run over. Returns how many commands were sent.
pub async fn resume_expired_runs(engine: &Engine) -> Result<usize, StoreError> {
    let mut sent = 0;
    for name in engine.app.workflow_stores() {
        let Some(store) = engine.stores.get(name) else { continue };
        let now = now_ms(engine);
        let limit = u32::try_from(engine.settings.relay_batch).unwrap_or(u32::MAX);
        for lease in store.run_leases_expired(now, limit).await? {
            if !store.run_lease_clear_expired(&lease.run_id, &lease.lease_id, now).await? {
                continue; // renewed or taken over meanwhile
            }
            crate::fault!("relay.after_lease_cleared");
            let ids = store.commands_resend_for_run(&lease.run_id, engine.clock.now()).await?;
            let went = send_commands(engine, name, &ids).await;
            if went < ids.len() {
                tracing::warn!(run_id = lease.run_id, "could not resend a resumed run's commands");
            }
            tracing::info!(
                run_id = lease.run_id,
                holder = lease.worker_id,
                commands = ids.len(),
                "resumed a run whose executor stopped"
            );
            sent += went;
        }
    }
    Ok(sent)
}

/// A run its executor holds the lease on.
struct Leased<'a> {
    store_name: &'a str,
    store: &'a dyn Store,
    def: &'a WorkflowDef,
    lease_id: &'a str,
}

/// How many times a command's result is decided again on a run that moved meanwhile (another
/// command's result, an event, a cancellation) before the message is retried later.
const RESULT_TRIES: usize = 3;

/// Runs the command's capability, then commits its result under the lease, deciding it on the
/// state read before the lease was taken; a run that moved since is read again.
async fn execute(
    engine: &Engine,
    run: &Leased<'_>,
    command: &CommandRow,
    mut state: ExecutionState,
    go_on: bool,
) -> Result<Executed, CommandError> {
    let request = CommandRequest {
        command_id: command.id.clone(),
        run_id: command.run_id.clone(),
        node_id: command.node_id.clone(),
        payload: command.payload.clone(),
        idempotency_key: command.idempotency_key.clone().unwrap_or_else(|| command.id.clone()),
    };
    crate::fault!("command.before_capability");
    let result = match engine.app.capability(&command.command_type) {
        Some(capability) => {
            let mut ctx = CapabilityContext::new(
                engine.connections.as_ref(),
                request.idempotency_key.clone(),
                engine.clock.now(),
            );
            match holding_lease(engine, run, &command.run_id, capability.run(&mut ctx, &request))
                .await
            {
                Held::Done(result) => result,
                Held::Lost => return Err(CommandError::Busy(command.run_id.clone())),
                Held::TimedOut => Err(HandlerError::Failed(format!(
                    "capability {:?} did not finish within {} s",
                    command.command_type,
                    engine.settings.workflows.capability_deadline.as_secs_f64()
                ))),
            }
        }
        None => Err(HandlerError::Failed(format!(
            "capability {:?} is not declared",
            command.command_type
        ))),
    };
    let incoming = match result {
        Ok(value) => Incoming::CommandCompleted {
            command_id: command.id.clone(),
            node_id: command.node_id.clone(),
            result: value,
        },
        Err(HandlerError::Store(e)) if e.is_retryable() => return Err(e.into()),
        Err(e) => Incoming::CommandFailed {
            command_id: command.id.clone(),
            node_id: command.node_id.clone(),
            error: e.to_string(),
        },
    };
    crate::fault!("command.before_result_commit");
    for _ in 0..RESULT_TRIES {
        let now = now_ms(engine);
        let t = decide(run.def, Some(&state), &incoming, &command.run_id, now)
            .map_err(|e| CommandError::Unrunnable(format!("run {}: {e}", command.run_id)))?;
        let next = next_in_chain(&t, &command.run_id).filter(|_| go_on);
        let end = match next {
            Some(_) => LeaseEnd::Renew { expires_at: now + lease_ms(engine) },
            None => LeaseEnd::Release,
        };
        let lease = LeaseFence { lease_id: run.lease_id.to_owned(), now_ms: now, end };
        let write = TransitionWrite {
            owner: None,
            actor: None,
            run_id: &command.run_id,
            expected_revision: Some(state.revision),
            transition: &t,
            session: None,
            lease: Some(lease),
        };
        match run.store.commit_transition(&write).await {
            Ok(()) => {
                crate::fault!("command.after_result_commit");
                let Some(next) = next else {
                    enqueue_commands(engine, run.store_name, &command.run_id, &t.commands).await;
                    return Ok(Executed::Done(CommandResult::Committed));
                };
                return Ok(Executed::Then(Box::new(next), Box::new(t.state)));
            }
            Err(TransitionError::Store(e)) => return Err(e.into()),
            Err(TransitionError::StaleRevision { .. }) => {
                let Some(now) = run.store.execution_get(&command.run_id).await? else {
                    return Ok(Executed::Done(CommandResult::Gone));
                };
                state = now;
            }
            Err(_) => break,
        }
    }
    Err(CommandError::Busy(command.run_id.clone()))
}
