//! Workflow versions, on both adapters: a run keeps the version it started on; a deployment
//! that no longer registers that version parks the run (its command stays pending, events and
//! cancellation are refused with the operator's message, the new version's graph never advances
//! it); a deployment that declares the old version draining finishes the run on the old graph
//! while new runs start on the new one. And the declaration's own checks.

use std::sync::Arc;

use async_trait::async_trait;
use jadpo_application::{
    AppError, Application, ApplicationBuilder, Capability, CapabilityContext, CommandRequest,
    HandlerError,
};
use jadpo_engine::EngineSettings;
use jadpo_engine::dispatch::Dispatched;
use jadpo_engine::relay::relay;
use jadpo_engine::workflow::runs::{
    CommandResult, EngineError, cancel_run, find_run, parked, post_event, run_events, start_run,
};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::def::{Node, WorkflowDef};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::{Value, json};

struct Done;

#[async_trait]
impl Capability for Done {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        Ok(json!({"node": command.node_id}))
    }
}

fn step(capability: &str, next: &str) -> Node {
    Node::Capability {
        capability: capability.into(),
        inputs: Vec::new(),
        idempotency_key: None,
        output: capability.into(),
        next: next.into(),
        on_failure: None,
        compensate: None,
    }
}

/// Version 1 packs; version 2 weighs, then packs.
fn ship(version: &str) -> WorkflowDef {
    let built = if version == "1" {
        WorkflowDef::builder("ship", "1", "pack").node("pack", step("pack", "done"))
    } else {
        WorkflowDef::builder("ship", version, "weigh")
            .node("weigh", step("weigh", "pack"))
            .node("pack", step("pack", "done"))
    };
    built.node("done", Node::Complete).build().unwrap_or_else(|e| panic!("{e}"))
}

fn base() -> ApplicationBuilder {
    Application::builder("versions")
        .store("main")
        .capability("pack", Done)
        .capability("weigh", Done)
}

fn built(b: ApplicationBuilder) -> Arc<Application> {
    Arc::new(b.build().unwrap_or_else(|e| panic!("{e}")))
}

async fn state(env: &Env, run: &str) -> jadpo_workflow::state::ExecutionState {
    find_run(&env.engine, run).await.map(|(_, s)| s).unwrap_or_else(|e| panic!("{e}"))
}

async fn nodes_issued(env: &Env, run: &str) -> Vec<String> {
    let events = run_events(&env.engine, run).await.unwrap_or_else(|e| panic!("{e}"));
    events
        .iter()
        .filter(|(e, _)| e.event_type == "command.issued")
        .filter_map(|(e, _)| e.payload["node"].as_str().map(str::to_owned))
        .collect()
}

async fn a_run_keeps_its_version(kind: Kind) {
    let mut env = Env::new(
        kind,
        base().workflow(ship("1"), "main").build().unwrap_or_else(|e| panic!("{e}")),
        EngineSettings::default(),
    )
    .await;
    let run = start_run(&env.engine, "ship", json!({}), None, None).await;
    let run = run.unwrap_or_else(|e| panic!("{e}")).run_id;
    let before = state(&env, &run).await;
    assert_eq!(before.workflow_version, "1");

    // A deployment of version 2 alone: the run is parked, nothing advances it.
    env.engine.app = built(base().workflow(ship("2"), "main"));
    let results = env.drain().await;
    let reason = match results.as_slice() {
        [Ok(Dispatched::Command(CommandResult::Parked(reason)))] => reason.clone(),
        other => panic!("{kind:?}: the command was not parked: {other:?}"),
    };
    for words in
        [run.as_str(), "parked", "version \"1\"", "registers version 2", "workflow_draining"]
    {
        assert!(reason.contains(words), "{kind:?}: {reason:?} lacks {words:?}");
    }
    assert_eq!(parked(&env.engine, &state(&env, &run).await).as_deref(), Some(reason.as_str()));
    let pending = "SELECT count(*) AS n FROM outbox_commands WHERE status = 'pending'";
    assert_eq!(env.count("main", pending).await, 1, "{kind:?}: the command was not kept pending");
    let event = post_event(&env.engine, &run, "nudge", json!({}), before.revision, None).await;
    assert!(matches!(event, Err(EngineError::Parked(_))), "{kind:?}: {event:?}");
    let cancel = cancel_run(&env.engine, &run, "operator", None).await;
    assert!(matches!(cancel, Err(EngineError::Parked(_))), "{kind:?}: {cancel:?}");
    // The relay offers the command again each redelivery window; it stays parked.
    env.clock.advance(chrono::Duration::minutes(20));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let report = relay(&env.engine, deadline).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.sent, 1, "{kind:?}: the parked command was not offered again");
    let again = env.drain().await;
    assert!(
        matches!(again.as_slice(), [Ok(Dispatched::Command(CommandResult::Parked(_)))]),
        "{kind:?}: {again:?}"
    );
    let after = state(&env, &run).await;
    assert_eq!(
        (after.revision, after.status, after.current_node_id.clone()),
        (before.revision, before.status, before.current_node_id.clone()),
        "{kind:?}: another version's graph advanced the run"
    );

    // Version 2 current, version 1 draining: the old run finishes on its own graph, a new run
    // starts on version 2.
    env.engine.app = built(base().workflow(ship("2"), "main").workflow_draining(ship("1")));
    assert_eq!(parked(&env.engine, &after), None);
    let fresh = start_run(&env.engine, "ship", json!({}), None, None).await;
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}")).run_id;
    assert!(env.settle().await.is_empty());
    let old = state(&env, &run).await;
    assert_eq!((old.status, old.workflow_version.as_str()), (ExecutionStatus::Completed, "1"));
    assert_eq!(nodes_issued(&env, &run).await, ["pack"], "{kind:?}: the old run changed graph");
    let new = state(&env, &fresh).await;
    assert_eq!((new.status, new.workflow_version.as_str()), (ExecutionStatus::Completed, "2"));
    assert_eq!(nodes_issued(&env, &fresh).await, ["weigh", "pack"]);
}

#[tokio::test]
async fn a_run_keeps_its_version_and_is_parked_without_it_on_sqlite() {
    a_run_keeps_its_version(Kind::Sqlite).await;
}

#[tokio::test]
async fn a_run_keeps_its_version_and_is_parked_without_it_on_postgres() {
    a_run_keeps_its_version(Kind::Postgres).await;
}

#[test]
fn the_declaration_of_versions_is_checked() {
    let err = |b: ApplicationBuilder| b.build().err();
    let bad = |text: &str| Some(AppError::BadWorkflow(text.to_owned()));
    assert_eq!(
        err(base().workflow_draining(ship("1"))),
        bad("workflow \"ship\" version \"1\" is declared draining, but no current version of \
             \"ship\" is declared (.workflow)")
    );
    let twice = Some(AppError::Duplicate { kind: "workflow", name: "ship@1".into() });
    assert_eq!(err(base().workflow(ship("1"), "main").workflow_draining(ship("1"))), twice);
    let again = base().workflow(ship("2"), "main").workflow_draining(ship("1"));
    assert_eq!(err(again.workflow_draining(ship("1"))), twice);
    let long = "9".repeat(51);
    assert_eq!(
        err(base().workflow(ship(&long), "main")),
        bad(&format!("workflow \"ship\": version {long:?} must have 1 to 50 characters"))
    );
    assert!(err(base().workflow(ship(&"9".repeat(50)), "main")).is_none());
    let missing = Application::builder("versions")
        .store("main")
        .capability("pack", Done)
        .workflow(ship("1"), "main")
        .workflow_draining(ship("2"));
    assert_eq!(
        err(missing),
        Some(AppError::UnknownCapability { workflow: "ship".into(), capability: "weigh".into() })
    );
}
