//! The checkout workflow end to end on both adapters: runs start, commands cross the queue to
//! their capabilities, results commit as transitions, external events and cancellation work,
//! and a lost command is resent by the relay.

use jadpo_engine::workflow::runs::{
    EngineError, cancel_run, find_run, post_event, run_events, start_run,
};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::state::ExecutionStatus;
use jadpo_workflow::state::replay;
use serde_json::json;

async fn started(env: &mut Env) -> String {
    let state = start_run(&env.engine, "checkout", json!({"order_id": "o-7"}), None, None).await;
    let state = state.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state.status, ExecutionStatus::Running);
    state.run_id
}

async fn status(env: &Env, run: &str) -> ExecutionStatus {
    find_run(&env.engine, run).await.map(|(_, s)| s.status).unwrap_or_else(|e| panic!("{e}"))
}

async fn checkout_runs_to_completion(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let run = started(&mut env).await;
    let (_, first) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    env.clock.advance(chrono::Duration::seconds(30));
    env.drain().await; // reserve, then charge
    assert_eq!(status(&env, &run).await, ExecutionStatus::Waiting);
    let charges = env.sinks.received("payments");
    assert_eq!(charges.len(), 1);
    assert_eq!(
        charges[0]["idempotency_key"],
        json!(format!("{run}:charge")),
        "the provider gets the resolved key"
    );
    let (_, state) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    let stale =
        post_event(&env.engine, &run, "shipment.confirmed", json!({}), state.revision - 1, None)
            .await;
    assert!(matches!(stale, Err(EngineError::Stale { .. })), "{stale:?}");
    let wrong = post_event(&env.engine, &run, "parcel.lost", json!({}), state.revision, None).await;
    assert!(matches!(wrong, Err(EngineError::Rejected(_))), "{wrong:?}");
    let carrier = jadpo_core::model::principal::Principal::Service("carrier".into());
    let done = post_event(
        &env.engine,
        &run,
        "shipment.confirmed",
        json!({"carrier": "ups"}),
        state.revision,
        Some(&carrier),
    )
    .await;
    let done = done.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.status, ExecutionStatus::Completed);
    let acted = run_events(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    // The posted event's events name the carrier; the steps' completions, the runtime (none).
    let by_carrier: Vec<u64> = acted
        .iter()
        .filter(|(_, a)| a.as_deref() == Some("service:carrier"))
        .map(|(e, _)| e.seq)
        .collect();
    assert!(!by_carrier.is_empty() && by_carrier.iter().all(|s| *s > state.revision), "{acted:?}");
    assert!(acted.iter().any(|(e, a)| a.is_none() && e.seq <= state.revision), "{acted:?}");
    let events: Vec<_> = acted.into_iter().map(|(e, _)| e).collect();
    assert_eq!(replay(&run, &events).as_ref(), Some(&done));
    // Every transition kept when the run began and what it was given.
    assert_eq!(done.created_at, first.created_at, "{kind:?}: created_at moved");
    assert!(done.updated_at >= first.created_at + 30_000, "{kind:?}: updated_at stood still");
    assert_eq!(done.input, json!({"order_id": "o-7"}), "{kind:?}: the input changed");
    assert_eq!(done.input, first.input);
    let pending = env
        .count("main", "SELECT count(*) AS n FROM outbox_commands WHERE status = 'pending'")
        .await;
    assert_eq!(pending, 0, "every command was acknowledged");
}

async fn cancel_compensates_latest_first(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let run = started(&mut env).await;
    env.drain().await;
    let cancelling = cancel_run(&env.engine, &run, "customer changed their mind", None).await;
    assert_eq!(cancelling.map(|s| s.status).ok(), Some(ExecutionStatus::Cancelling));
    env.drain().await;
    assert_eq!(status(&env, &run).await, ExecutionStatus::Cancelled);
    let kinds: Vec<_> =
        env.sinks.received("payments").iter().map(|m| m["body"]["kind"].clone()).collect();
    assert_eq!(kinds, vec![json!("charge"), json!("refund")]);
    let again = cancel_run(&env.engine, &run, "twice", None).await;
    assert!(matches!(again, Err(EngineError::Rejected(_))), "{again:?}");
}

async fn a_lost_command_is_resent_and_the_run_resumes(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let run = started(&mut env).await;
    while env.rx.try_recv().is_ok() {} // the queue lost the reserve command
    env.settle().await;
    assert_eq!(status(&env, &run).await, ExecutionStatus::Waiting);
    assert_eq!(env.sinks.received("payments").len(), 1, "charged exactly once");
}

/// A `claimed` command (a worker of another implementation took it, or an imported history
/// holds one, and it never finished) is resumed as a pending one: by its queue message, and,
/// lost from the queue, by the relay's sweep; the run goes on to its wait, charged once.
async fn a_claimed_command_is_resumed(kind: Kind) {
    for lost in [false, true] {
        let mut env = Env::shop(kind).await;
        let run = started(&mut env).await;
        let claimed = "UPDATE outbox_commands SET status = 'claimed' WHERE status = 'pending'";
        let n = env.store("main").execute_once(claimed, &[]).await;
        assert_eq!(n.unwrap_or_else(|e| panic!("{e}")), 1, "{kind:?}: one command claimed");
        if lost {
            while env.rx.try_recv().is_ok() {}
            env.settle().await;
        } else {
            env.drain().await;
        }
        assert_eq!(status(&env, &run).await, ExecutionStatus::Waiting, "{kind:?} lost={lost}");
        assert_eq!(env.sinks.received("payments").len(), 1, "{kind:?}: charged exactly once");
        let left =
            "SELECT count(*) AS n FROM outbox_commands WHERE status IN ('pending', 'claimed')";
        assert_eq!(env.count("main", left).await, 0, "{kind:?}: every command finished");
    }
}

async fn a_payments_outage_fails_the_run_visibly(kind: Kind) {
    let mut env = Env::shop(kind).await;
    env.sinks.set_failing("payments", true);
    let run = started(&mut env).await;
    env.drain().await;
    let (_, state) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state.status, ExecutionStatus::Failed);
    let error = state.error.map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("answered 503"), "{error}");
}

async fn sequential_steps_run_back_to_back_under_one_lease(kind: Kind) {
    // Checkout's reserve then charge: one message, both results, the lease gone at the end.
    let mut env = Env::shop(kind).await;
    let run = started(&mut env).await;
    let results = env.drain().await;
    assert_eq!(results.len(), 1, "{kind:?}: charge ran behind reserve, unsent: {results:?}");
    assert!(results.iter().all(Result::is_ok), "{kind:?}: {results:?}");
    assert_eq!(status(&env, &run).await, ExecutionStatus::Waiting);
    assert_eq!(env.sinks.received("payments").len(), 1, "{kind:?}: charged once");
    assert_eq!(
        crate::steps_app::counts(&env).await,
        (0, 1),
        "{kind:?}: no lease left; only reserve was sent"
    );
    let relay = jadpo_engine::relay::relay(&env.engine, far()).await;
    assert_eq!(relay.map(|r| r.sent).ok(), Some(0), "{kind:?}: nothing left for the relay");

    // Twenty steps: sixteen back to back, then the next one is queued like any other.
    let mut env = Env::new(kind, crate::steps_app::steps_app(20), Default::default()).await;
    let state = start_run(&env.engine, "steps", json!({}), None, None).await;
    let run = state.unwrap_or_else(|e| panic!("{e}")).run_id;
    let results = env.drain().await;
    assert_eq!(results.len(), 2, "{kind:?}: 16 commands on the first message, 4 on the next");
    assert_eq!(status(&env, &run).await, ExecutionStatus::Completed);
    assert_eq!(crate::steps_app::counts(&env).await, (0, 2), "{kind:?}");
    let events = run_events(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    let done = events.iter().filter(|(e, _)| e.event_type == "command.completed").count();
    assert_eq!(done, 20, "{kind:?}: every step completed once");
}

fn far() -> std::time::Instant {
    std::time::Instant::now() + std::time::Duration::from_secs(5)
}

jadpo_test_env::both!(
    sequential_steps_run_back_to_back_under_one_lease,
    checkout_runs_to_completion,
    cancel_compensates_latest_first,
    a_lost_command_is_resent_and_the_run_resumes,
    a_payments_outage_fails_the_run_visibly,
    a_claimed_command_is_resumed,
);
