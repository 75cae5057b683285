//! Deleting runs, on both adapters: `delete_run` (what `jadpo runs delete` calls) removes a run
//! with its events, commands, dispatch rows and lease, unbinds its Session and records the
//! operator action in the same transaction, refusing an unfinished run unless forced, a blank
//! reason and an unknown run (changing nothing); housekeeping's retention deletes finished runs
//! and idle Sessions per workflow, and Sessions bound to no run, in bounded batches, keeping
//! everything younger and every unfinished run.

use std::sync::Arc;

use jadpo_application::{Application, WorkflowRetention};
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_core::model::operator::ActionFilter;
use jadpo_engine::dispatch::Dispatched;
use jadpo_engine::housekeeping::housekeep_all;
use jadpo_engine::operate::Operator;
use jadpo_engine::workflow::delete::{DeleteError, delete_run};
use jadpo_engine::workflow::runs::{CommandResult, find_run};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::state::ExecutionStatus;

use crate::retention_app;
use retention_app::{env, of_run, session, session_row, start};

async fn an_operator_deletes_a_run(kind: Kind) {
    let mut env = env(kind).await;
    let store = Arc::clone(env.store("main"));
    let clock = Arc::clone(&env.clock);
    let clock = clock.as_ref();
    let dora = Operator::new("dora").unwrap_or_else(|e| panic!("{e}"));
    session(&env, "s-1").await;
    let done = start(&env, Some("s-1")).await;
    env.settle().await;
    let open = start(&env, None).await; // its command is on the queue, not run yet
    let bound = session_row(&env, "s-1").await;
    assert_eq!(bound.as_ref().and_then(|b| b.0.clone()), Some(done.clone()));

    // Refused, changing nothing: a blank reason, an unknown run, an unfinished run.
    let blank = delete_run(store.as_ref(), clock, &dora, &done, "  ", false).await;
    assert!(matches!(blank, Err(DeleteError::NoReason)), "{kind:?}: {blank:?}");
    let unknown = delete_run(store.as_ref(), clock, &dora, "nope", "test", false).await;
    assert!(matches!(unknown, Err(DeleteError::NotFound(_))), "{kind:?}: {unknown:?}");
    let unfinished = delete_run(store.as_ref(), clock, &dora, &open, "test", false).await;
    let message = unfinished.as_ref().err().map(ToString::to_string).unwrap_or_default();
    assert!(message.contains("is running, not finished"), "{kind:?}: {message}");
    assert_eq!(of_run(&env, "workflow_executions", &open).await, 1);
    assert_eq!(of_run(&env, "workflow_executions", &done).await, 1);

    // A finished run: gone with everything of it, its Session unbound, the act recorded.
    let deleted = delete_run(store.as_ref(), clock, &dora, &done, "customer asked", false).await;
    let deleted = deleted.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!((deleted.commands, deleted.sessions_unbound), (1, 1), "{kind:?}");
    assert!(deleted.events >= 4, "{kind:?}: {deleted:?}");
    for table in
        ["workflow_executions", "workflow_events", "outbox_commands", "jadpo_command_dispatch"]
    {
        assert_eq!(of_run(&env, table, &done).await, 0, "{kind:?}: {table} kept the run's rows");
    }
    let (run, revision) = session_row(&env, "s-1").await.unwrap_or_default();
    assert_eq!(run, None, "{kind:?}: the Session still names the deleted run");
    assert_eq!(revision, bound.map_or(0, |b| b.1) + 1, "{kind:?}: the unbinding is a new revision");
    let filter = ActionFilter { item: Some(done.clone()), limit: 10, ..ActionFilter::default() };
    let actions = store.operator_actions(&filter).await.unwrap_or_else(|e| panic!("{e}"));
    let [action] = actions.as_slice() else { panic!("{kind:?}: {actions:?}") };
    assert_eq!(
        (action.action.as_str(), action.operator.as_str(), action.detail.as_deref()),
        ("run.delete", "dora", Some("customer asked"))
    );
    assert!(action.item_state.contains("\"status\":\"completed\""), "{}", action.item_state);
    let again = delete_run(store.as_ref(), clock, &dora, &done, "again", false).await;
    assert!(matches!(again, Err(DeleteError::NotFound(_))), "{kind:?}: {again:?}");

    // Forced, an unfinished run goes with its pending command; its queued message finds nothing.
    delete_run(store.as_ref(), clock, &dora, &open, "stuck", true)
        .await
        .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!(of_run(&env, "jadpo_command_dispatch", &open).await, 0, "{kind:?}");
    let results = env.drain().await;
    assert!(
        matches!(results.as_slice(), [Ok(Dispatched::Command(CommandResult::Gone))]),
        "{kind:?}: {results:?}"
    );
}

async fn housekeeping_keeps_runs_and_sessions_as_declared(kind: Kind) {
    let mut env = env(kind).await;
    session(&env, "bound").await;
    session(&env, "unbound").await;
    let mut finished = vec![start(&env, Some("bound")).await];
    for _ in 0..4 {
        finished.push(start(&env, None).await);
    }
    env.settle().await;
    env.clock.advance(chrono::Duration::hours(1));
    let open = start(&env, None).await; // never run: unfinished for good
    for run in &finished {
        let status = find_run(&env.engine, run).await.map(|(_, s)| s.status);
        assert_eq!(status.ok(), Some(ExecutionStatus::Completed), "{kind:?}");
    }
    let deleted = |reports: &[jadpo_engine::housekeeping::HousekeepingReport], class| {
        reports
            .iter()
            .flat_map(|r| &r.deleted)
            .filter(|(c, _)| *c == class)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    let pass = |env: &Env| {
        let engine = env.engine.clone();
        async move {
            let (reports, failures) = housekeep_all(&engine, "test").await;
            assert!(failures.is_empty(), "{failures:?}");
            reports
        }
    };

    // Day 3: the Session bound to a finished run went idle past 2 days; runs are kept 10 days,
    // and a Session bound to no run 5 days.
    env.clock.advance(chrono::Duration::days(3));
    let reports = pass(&env).await;
    assert_eq!(deleted(&reports, RecordClass::IdleSessions), 1, "{kind:?}: {reports:?}");
    assert_eq!(deleted(&reports, RecordClass::FinishedRuns), 0, "{kind:?}");
    assert!(session_row(&env, "bound").await.is_none(), "{kind:?}: the idle Session was kept");
    assert!(session_row(&env, "unbound").await.is_some(), "{kind:?}");

    // Day 11: the finished runs go, in batches of 2, with their rows; the unfinished run and
    // nothing younger stay; the Session bound to no run went idle past 5 days.
    env.clock.advance(chrono::Duration::days(8));
    let reports = pass(&env).await;
    assert_eq!(deleted(&reports, RecordClass::FinishedRuns), 5, "{kind:?}: {reports:?}");
    assert_eq!(deleted(&reports, RecordClass::IdleSessions), 1, "{kind:?}");
    assert!(reports.iter().map(|r| r.batches).sum::<u64>() >= 3, "{kind:?}: not in batches");
    for run in &finished {
        for table in
            ["workflow_executions", "workflow_events", "outbox_commands", "jadpo_command_dispatch"]
        {
            assert_eq!(of_run(&env, table, run).await, 0, "{kind:?}: {table} kept {run}");
        }
    }
    assert_eq!(
        of_run(&env, "workflow_executions", &open).await,
        1,
        "{kind:?}: unfinished run deleted"
    );
    assert!(session_row(&env, "unbound").await.is_none(), "{kind:?}");
    let again = pass(&env).await;
    assert_eq!(deleted(&again, RecordClass::FinishedRuns), 0, "{kind:?}");
}

#[tokio::test]
async fn an_operator_deletes_a_run_on_sqlite() {
    an_operator_deletes_a_run(Kind::Sqlite).await;
}

#[tokio::test]
async fn an_operator_deletes_a_run_on_postgres() {
    an_operator_deletes_a_run(Kind::Postgres).await;
}

#[tokio::test]
async fn housekeeping_keeps_runs_and_sessions_as_declared_on_sqlite() {
    housekeeping_keeps_runs_and_sessions_as_declared(Kind::Sqlite).await;
}

#[tokio::test]
async fn housekeeping_keeps_runs_and_sessions_as_declared_on_postgres() {
    housekeeping_keeps_runs_and_sessions_as_declared(Kind::Postgres).await;
}

#[test]
fn a_retention_for_an_undeclared_workflow_is_refused() {
    let declared = Application::builder("retention")
        .store("main")
        .workflow_retention("nope", WorkflowRetention::default())
        .build();
    assert_eq!(
        declared.err().map(|e| e.to_string()).as_deref(),
        Some("a retention is declared for workflow \"nope\", which is not declared")
    );
}

/// An application that declares no workflow retention keeps every run and Session however
/// old: housekeeping a year and more later deletes neither a finished run, nor its Session, nor
/// a Session bound to none.
async fn without_a_declared_retention_runs_and_sessions_stay(kind: Kind) {
    let mut env = retention_app::env_of(kind, retention_app::app_without_retention()).await;
    session(&env, "bound").await;
    session(&env, "unbound").await;
    let run = start(&env, Some("bound")).await;
    env.settle().await;
    let status = find_run(&env.engine, &run).await.map(|(_, s)| s.status);
    assert!(status.as_ref().is_ok_and(|s| s.is_terminal()), "{kind:?}: {status:?}");
    env.clock.advance(chrono::Duration::days(400));
    let (reports, failures) = housekeep_all(&env.engine, "test").await;
    assert!(failures.is_empty(), "{kind:?}: {failures:?}");
    let runs_or_sessions = reports
        .iter()
        .flat_map(|r| &r.deleted)
        .filter(|(c, _)| matches!(c, RecordClass::FinishedRuns | RecordClass::IdleSessions))
        .map(|(_, n)| n)
        .sum::<u64>();
    assert_eq!(runs_or_sessions, 0, "{kind:?}: {reports:?}");
    assert_eq!(of_run(&env, "workflow_executions", &run).await, 1, "{kind:?}: the run went");
    for id in ["bound", "unbound"] {
        assert!(session_row(&env, id).await.is_some(), "{kind:?}: Session {id} went");
    }
}

#[tokio::test]
async fn without_a_declared_retention_runs_and_sessions_stay_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        without_a_declared_retention_runs_and_sessions_stay(kind).await;
    }
}
