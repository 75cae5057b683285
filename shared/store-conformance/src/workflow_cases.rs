//! Conformance cases for the workflow store: the atomic write lifecycle, OCC, Sessions.

use std::sync::Arc;

use jadpo_core::Store;
use jadpo_core::ports::TransitionError;
use jadpo_engine::workflow::session::{self, SessionError};
use jadpo_workflow::def::{Node, WorkflowDef};
use jadpo_workflow::kernel::{Incoming, Transition, decide};
use jadpo_workflow::rows::{LeaseEnd, LeaseFence, SessionWrite, TransitionWrite};
use jadpo_workflow::state::{ExecutionState, replay};
use serde_json::json;

use crate::Fixture;
use crate::cases::{migrated, ok};

fn checkout() -> WorkflowDef {
    let capability = |cap: &str, output: &str, next: &str, comp: &str| Node::Capability {
        capability: cap.to_owned(),
        inputs: vec![],
        idempotency_key: Some("{run_id}:{node}".to_owned()),
        output: output.to_owned(),
        next: next.to_owned(),
        on_failure: None,
        compensate: Some(comp.to_owned()),
    };
    WorkflowDef::builder("checkout", "1", "reserve")
        .node("reserve", capability("reserve", "reservation", "charge", "release"))
        .node("charge", capability("charge", "payment", "ship", "refund"))
        .node(
            "ship",
            Node::Wait {
                event: "shipment.confirmed".into(),
                output: "shipment".into(),
                next: "done".into(),
            },
        )
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn start(run: &str) -> Transition {
    ok(
        decide(
            &checkout(),
            None,
            &Incoming::Start { input: json!({"order_id": "o-1"}) },
            run,
            1_000,
        ),
        "decide",
    )
}

fn complete(state: &ExecutionState, t: &Transition, result: serde_json::Value) -> Transition {
    let c = &t.commands[0];
    let incoming =
        Incoming::CommandCompleted { command_id: c.id.clone(), node_id: c.node_id.clone(), result };
    ok(decide(&checkout(), Some(state), &incoming, &state.run_id, state.updated_at + 10), "decide")
}

async fn commit(
    store: &dyn Store,
    run: &str,
    expected: Option<u64>,
    t: &Transition,
    session: Option<SessionWrite>,
) -> Result<(), TransitionError> {
    store
        .commit_transition(&TransitionWrite {
            owner: None,
            // A start is a principal's; later transitions here are the runtime's.
            actor: expected.is_none().then_some("user:alice"),
            run_id: run,
            expected_revision: expected,
            transition: t,
            session,
            lease: None,
        })
        .await
}

async fn count(store: &dyn Store, sql: &str, run: &str) -> i64 {
    let rows = ok(store.query_once(sql, &[run.into()]).await, sql);
    rows.first().map(|r| ok(r.get_i64("n"), "n")).unwrap_or(-1)
}

/// `Repeat { times: 3 }` around one capability, then complete.
fn rounds() -> WorkflowDef {
    let ping = Node::Capability {
        capability: "ping".into(),
        inputs: vec![],
        idempotency_key: None,
        output: "answer".into(),
        next: "rounds".into(),
        on_failure: None,
        compensate: None,
    };
    WorkflowDef::builder("rounds", "1", "rounds")
        .node("rounds", Node::Repeat { times: 3, body: "ping".into(), next: "done".into() })
        .node("ping", ping)
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A `Repeat` run through a real store: after each transition the state read back, its
/// `loop_state` (the iterations done) included, is the one written and the replay of the stored
/// events; the run leaves the loop after exactly three iterations (its count then cleared) and
/// completes.
pub async fn a_repeat_s_loop_state_survives_the_store(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let def = rounds();
    let start = Incoming::Start { input: json!({}) };
    let mut t = ok(decide(&def, None, &start, "run-r", 1_000), "start");
    ok(commit(store.as_ref(), "run-r", None, &t, None).await, "commit start");
    let mut iterations = Vec::new();
    loop {
        let stored =
            ok(store.execution_get("run-r").await, "get").unwrap_or_else(|| panic!("gone"));
        assert_eq!(stored, t.state, "the state read back differs from the one written");
        let events = ok(store.execution_events("run-r").await, "events");
        assert_eq!(replay("run-r", &events).as_ref(), Some(&stored), "stored events replay");
        iterations.push(stored.loop_state.as_ref().and_then(|l| l.get("rounds")).cloned());
        let Some(c) = t.commands.first().cloned() else { break };
        let done = Incoming::CommandCompleted {
            command_id: c.id.clone(),
            node_id: c.node_id.clone(),
            result: json!({"n": iterations.len()}),
        };
        let at = stored.updated_at + 10;
        let next = ok(decide(&def, Some(&stored), &done, "run-r", at), "decide");
        ok(commit(store.as_ref(), "run-r", Some(stored.revision), &next, None).await, "commit");
        t = next;
    }
    // Leaving the loop clears its count, so a loop entered again starts afresh.
    assert_eq!(iterations, vec![Some(json!(1)), Some(json!(2)), Some(json!(3)), None]);
    assert_eq!(t.state.status.as_str(), "completed");
}

/// A started run reads back exactly, with its events and its pending command.
pub async fn a_started_run_reads_back_exactly(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let t = start("run-1");
    ok(commit(store.as_ref(), "run-1", None, &t, None).await, "commit");
    let state =
        ok(store.execution_get("run-1").await, "get").unwrap_or_else(|| panic!("run missing"));
    assert_eq!(state, t.state);
    let events = ok(store.execution_events("run-1").await, "events");
    assert_eq!(events, t.events);
    let actors = ok(store.execution_event_actors("run-1").await, "actors");
    let seqs: Vec<u64> = t.events.iter().map(|e| e.seq).collect();
    assert_eq!(actors.keys().copied().collect::<Vec<_>>(), seqs, "each event names its actor");
    assert!(actors.values().all(|a| a == "user:alice"), "{actors:?}");
    // Paged reads: bounded, in order, each event with its actor, and empty past the end.
    let first = ok(store.execution_events_page("run-1", 0, 2).await, "first page");
    let rest = ok(store.execution_events_page("run-1", 2, 100).await, "the rest");
    let paged: Vec<_> = first.iter().chain(rest.iter()).map(|(e, _)| e.clone()).collect();
    assert_eq!((first.len(), paged), (2.min(t.events.len()), t.events.clone()));
    assert!(first.iter().chain(rest.iter()).all(|(_, a)| a.as_deref() == Some("user:alice")));
    let last = t.events.last().map_or(0, |e| e.seq);
    assert!(ok(store.execution_events_page("run-1", last, 10).await, "past the end").is_empty());
    assert_eq!(
        state.revision,
        events.last().map_or(0, |e| e.seq),
        "revision equals the last event's seq"
    );
    let ids = ok(
        store
            .query_once(
                "SELECT id FROM workflow_events WHERE run_id = $1 ORDER BY seq",
                &["run-1".into()],
            )
            .await,
        "ids",
    );
    assert_eq!(ok(ids[0].get_str("id"), "id"), "run-1:1");
    let cmd = ok(
        store
            .query_once(
                "SELECT status, idempotency_key FROM outbox_commands WHERE run_id = $1",
                &["run-1".into()],
            )
            .await,
        "command",
    );
    assert_eq!(ok(cmd[0].get_str("status"), "status"), "pending");
    assert_eq!(ok(cmd[0].get_opt_str("idempotency_key"), "key"), Some("run-1:reserve"));
    assert!(ok(store.execution_get("other").await, "get").is_none());
}

/// A transition decided on a stale revision is refused and leaves no trace.
pub async fn a_stale_revision_is_refused_and_exposes_nothing(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let t0 = start("run-1");
    ok(commit(store.as_ref(), "run-1", None, &t0, None).await, "start");
    let again = commit(store.as_ref(), "run-1", None, &t0, None).await;
    assert!(matches!(again, Err(TransitionError::StaleRevision { .. })), "{again:?}");
    let a = complete(&t0.state, &t0, json!("a"));
    let b = complete(&t0.state, &t0, json!("b"));
    ok(commit(store.as_ref(), "run-1", Some(t0.state.revision), &a, None).await, "first");
    let lost = commit(store.as_ref(), "run-1", Some(t0.state.revision), &b, None).await;
    assert!(matches!(lost, Err(TransitionError::StaleRevision { .. })), "{lost:?}");
    let state = ok(store.execution_get("run-1").await, "get").unwrap_or_else(|| panic!("gone"));
    assert_eq!(state.data["reservation"], json!("a"), "the loser's data leaked");
    let events = count(
        store.as_ref(),
        "SELECT count(*) AS n FROM workflow_events WHERE run_id = $1",
        "run-1",
    )
    .await;
    assert_eq!(events, i64::try_from(a.state.revision).unwrap_or(0));
    let commands = count(
        store.as_ref(),
        "SELECT count(*) AS n FROM outbox_commands WHERE run_id = $1",
        "run-1",
    )
    .await;
    assert_eq!(commands, 2, "start's command and the winner's");
    let acked = ok(
        store
            .query_once(
                "SELECT status, processed_at FROM outbox_commands WHERE id = $1",
                &[t0.commands[0].id.as_str().into()],
            )
            .await,
        "ack",
    );
    assert_eq!(ok(acked[0].get_str("status"), "status"), "completed");
    assert!(ok(acked[0].get_opt_timestamp("processed_at"), "processed_at").is_some());
}

/// Acknowledging a command twice is refused, with nothing written.
pub async fn a_command_is_acknowledged_once(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let t0 = start("run-1");
    ok(commit(store.as_ref(), "run-1", None, &t0, None).await, "start");
    let t1 = complete(&t0.state, &t0, json!("a"));
    ok(commit(store.as_ref(), "run-1", Some(t0.state.revision), &t1, None).await, "complete");
    let mut t2 = complete(&t1.state, &t1, json!("b"));
    t2.acks.push(t1.acks[0].clone());
    let refused = commit(store.as_ref(), "run-1", Some(t1.state.revision), &t2, None).await;
    assert!(matches!(refused, Err(TransitionError::CommandNotPending(_))), "{refused:?}");
    let state = ok(store.execution_get("run-1").await, "get").unwrap_or_else(|| panic!("gone"));
    assert_eq!(state.revision, t1.state.revision, "the refused transition wrote its state");
}

/// Many writers race on one run with one expected revision, each on its own connection and
/// (the runtime having several threads) at the same time: exactly one wins, and every other one
/// is refused for a stale revision — not for any error (a busy database, a broken transaction).
pub async fn concurrent_writers_on_one_run_have_one_winner(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let t0 = start("run-1");
    ok(commit(store.as_ref(), "run-1", None, &t0, None).await, "start");
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s: Arc<dyn Store> = fx.open();
            let t = complete(&t0.state, &t0, json!(i));
            let rev = t0.state.revision;
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                commit(s.as_ref(), "run-1", Some(rev), &t, None).await
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        match ok(t.await, "writer") {
            Ok(()) => winners += 1,
            Err(TransitionError::StaleRevision { .. }) => {}
            Err(other) => {
                panic!("a loser failed for another reason than a stale revision: {other}")
            }
        }
    }
    assert_eq!(winners, 1);
    let events = ok(store.execution_events("run-1").await, "events");
    let state = ok(store.execution_get("run-1").await, "get").unwrap_or_else(|| panic!("gone"));
    assert_eq!(
        replay("run-1", &events).as_ref(),
        Some(&state),
        "events and state disagree after the race"
    );
}

/// A start in a Session binds it; wrong owner or stale revision refuse and leave no run.
pub async fn sessions_bind_starts_and_refuse_wrong_owner_or_stale_revision(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default();
    ok(store.session_create("s-1", "alice", &json!({"tenant": "t1"}), now, None).await, "session");
    let write = |user: &str, rev: i64| {
        Some(SessionWrite {
            session_id: "s-1".into(),
            user_id: user.into(),
            expected_revision: rev,
        })
    };
    let wrong = commit(store.as_ref(), "run-x", None, &start("run-x"), write("mallory", 0)).await;
    assert!(matches!(wrong, Err(TransitionError::SessionNotFound(_))), "{wrong:?}");
    let stale = commit(store.as_ref(), "run-y", None, &start("run-y"), write("alice", 5)).await;
    assert!(matches!(stale, Err(TransitionError::StaleSession { actual: 0, .. })), "{stale:?}");
    for run in ["run-x", "run-y"] {
        assert!(ok(store.execution_get(run).await, "get").is_none(), "a refused start left {run}");
    }
    ok(commit(store.as_ref(), "run-1", None, &start("run-1"), write("alice", 0)).await, "start");
    let session = ok(store.session_get("s-1").await, "get").unwrap_or_else(|| panic!("no session"));
    assert_eq!(
        (session.active_run_id.as_deref(), session.revision, session.context_revision),
        (Some("run-1"), 1, 0)
    );
    assert_eq!(session.context, json!({"tenant": "t1"}));
}

/// Two processes start a run in one Session at once: one wins, the other's run vanishes.
pub async fn two_starts_in_one_session_have_one_winner(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default();
    ok(store.session_create("s-1", "alice", &json!({}), now, None).await, "session");
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let race = |run: &'static str| {
        let (s, barrier) = (fx.open(), Arc::clone(&barrier));
        tokio::spawn(async move {
            let w = SessionWrite {
                session_id: "s-1".into(),
                user_id: "alice".into(),
                expected_revision: 0,
            };
            barrier.wait().await;
            commit(s.as_ref(), run, None, &start(run), Some(w)).await
        })
    };
    let (a, b) = (race("run-a"), race("run-b"));
    let (a, b) = (ok(a.await, "run-a"), ok(b.await, "run-b"));
    for refused in [&a, &b].into_iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            matches!(refused, TransitionError::StaleSession { .. }),
            "the loser failed for another reason than a stale Session: {refused}"
        );
    }
    let (a, b) = (a.is_ok(), b.is_ok());
    assert!(a ^ b, "exactly one start must win: {a} {b}");
    let winner = if a { "run-a" } else { "run-b" };
    let loser = if a { "run-b" } else { "run-a" };
    assert!(ok(store.execution_get(loser).await, "get").is_none());
    let session = ok(store.session_get("s-1").await, "get").unwrap_or_else(|| panic!("no session"));
    assert_eq!((session.active_run_id.as_deref(), session.revision), (Some(winner), 1));
}

/// A run taken to completion replays from its stored events to its stored state.
pub async fn stored_events_replay_to_the_stored_state(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let def = checkout();
    let t = start("run-1");
    ok(commit(store.as_ref(), "run-1", None, &t, None).await, "start");
    let t1 = complete(&t.state, &t, json!({"hold": 1}));
    ok(commit(store.as_ref(), "run-1", Some(t.state.revision), &t1, None).await, "reserve");
    let t2 = complete(&t1.state, &t1, json!({"paid": true}));
    ok(commit(store.as_ref(), "run-1", Some(t1.state.revision), &t2, None).await, "charge");
    let shipped = Incoming::External {
        event_type: "shipment.confirmed".into(),
        payload: json!({"carrier": "x"}),
    };
    let t3 = ok(decide(&def, Some(&t2.state), &shipped, "run-1", 5_000), "decide");
    ok(commit(store.as_ref(), "run-1", Some(t2.state.revision), &t3, None).await, "ship");
    let state = ok(store.execution_get("run-1").await, "get").unwrap_or_else(|| panic!("gone"));
    assert_eq!(state.status.as_str(), "completed");
    let events = ok(store.execution_events("run-1").await, "events");
    assert_eq!(replay("run-1", &events).as_ref(), Some(&state));
    let status = ok(
        store
            .query_once(
                "SELECT status FROM workflow_executions WHERE run_id = $1",
                &["run-1".into()],
            )
            .await,
        "status",
    );
    assert_eq!(ok(status[0].get_str("status"), "status"), "completed");
}

/// A lease has one holder; a holder paused past its expiry loses it, cannot renew, and cannot
/// write; expired leases make their runs discoverable.
pub async fn leases_have_one_holder_and_fence_writes(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let t0 = start("run-1");
    ok(commit(store.as_ref(), "run-1", None, &t0, None).await, "start");
    let now = 10_000_i64;
    let runnable = ok(store.runs_runnable(now, 10).await, "runnable");
    assert_eq!(runnable, vec!["run-1".to_owned()], "a running run without a lease is runnable");
    let a = ok(store.run_lease_take("run-1", "worker-a", now, now + 1_000).await, "acquire");
    let a = a.unwrap_or_else(|| panic!("a free run's lease was refused"));
    assert!(
        ok(store.run_lease_take("run-1", "worker-b", now + 500, now + 1_500).await, "acquire")
            .is_none()
    );
    assert!(
        ok(store.runs_runnable(now + 500, 10).await, "runnable").is_empty(),
        "a leased run is not runnable"
    );
    assert!(ok(
        store.run_lease_extend("run-1", &a.lease_id, now + 900, now + 1_900).await,
        "renew"
    ));
    // worker-a pauses past its expiry; worker-b takes over.
    let b =
        ok(store.run_lease_take("run-1", "worker-b", now + 2_000, now + 3_000).await, "take over");
    let b = b.unwrap_or_else(|| panic!("an expired lease could not be taken over"));
    assert_ne!(a.lease_id, b.lease_id);
    assert!(
        !ok(store.run_lease_extend("run-1", &a.lease_id, now + 2_100, now + 4_000).await, "renew"),
        "a lost lease renewed"
    );
    let t1 = complete(&t0.state, &t0, json!("a"));
    let fenced = |lease: &str| TransitionWrite {
        owner: None,
        actor: None,
        run_id: "run-1",
        expected_revision: Some(t0.state.revision),
        transition: &t1,
        session: None,
        lease: Some(LeaseFence {
            lease_id: lease.to_owned(),
            now_ms: now + 2_100,
            end: LeaseEnd::Hold,
        }),
    };
    let refused = store.commit_transition(&fenced(&a.lease_id)).await;
    assert!(matches!(refused, Err(TransitionError::LeaseLost(_))), "{refused:?}");
    assert_eq!(
        ok(store.execution_get("run-1").await, "get").map(|s| s.revision),
        Some(t0.state.revision)
    );
    ok(store.commit_transition(&fenced(&b.lease_id)).await, "the holder writes");
    assert!(
        !ok(store.run_lease_give_up("run-1", &a.lease_id).await, "release"),
        "a lost lease released the new one"
    );
    assert!(ok(store.run_lease_give_up("run-1", &b.lease_id).await, "release"));
    assert_eq!(
        ok(store.runs_runnable(now + 2_200, 10).await, "runnable"),
        vec!["run-1".to_owned()]
    );
    a_write_can_end_its_lease(store.as_ref(), &t1, now + 2_300).await;
}

/// A write that ends its lease releases it in its own transaction; a refused one keeps it.
async fn a_write_can_end_its_lease(store: &dyn Store, t1: &Transition, now: i64) {
    let c = ok(store.run_lease_take("run-1", "worker-c", now, now + 1_000).await, "acquire");
    let c = c.unwrap_or_else(|| panic!("a released run's lease was refused"));
    let t2 = complete(&t1.state, t1, json!("b"));
    let ending = |expected: u64| TransitionWrite {
        owner: None,
        actor: None,
        run_id: "run-1",
        expected_revision: Some(expected),
        transition: &t2,
        session: None,
        lease: Some(LeaseFence {
            lease_id: c.lease_id.clone(),
            now_ms: now + 10,
            end: LeaseEnd::Release,
        }),
    };
    let stale = store.commit_transition(&ending(t1.state.revision - 1)).await;
    assert!(matches!(stale, Err(TransitionError::StaleRevision { .. })), "{stale:?}");
    assert!(
        ok(store.run_lease_take("run-1", "worker-d", now + 20, now + 1_000).await, "acquire")
            .is_none(),
        "a refused write ended its lease"
    );
    ok(store.commit_transition(&ending(t1.state.revision)).await, "the holder writes and ends");
    assert_eq!(
        ok(store.execution_get("run-1").await, "get").map(|s| s.revision),
        Some(t2.state.revision)
    );
    assert!(
        !ok(store.run_lease_give_up("run-1", &c.lease_id).await, "release"),
        "the write did not end its lease"
    );
    let d = ok(store.run_lease_take("run-1", "worker-d", now + 30, now + 1_000).await, "acquire");
    assert!(d.is_some(), "an ended lease still excludes another holder");
}

fn registered(id: &str) -> bool {
    id == "checkout"
}

/// Sessions: hydrate only on creation, owner-only restore, shallow merge under OCC, rehydrate,
/// `revision` vs `context_revision`, and restoration failing closed on a broken binding.
pub async fn sessions_follow_the_spec(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let now = chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default();
    let s = ok(
        session::load_or_create_session(
            store.as_ref(),
            "s-1",
            "alice",
            now,
            &registered,
            || json!({"tenant": "t1", "lang": "en"}),
        )
        .await,
        "create",
    );
    assert_eq!((s.revision, s.context_revision), (0, 0));
    let again =
        session::load_or_create_session(store.as_ref(), "s-1", "alice", now, &registered, || {
            panic!("hydrate ran for an existing session")
        })
        .await;
    assert_eq!(ok(again, "load").context, json!({"tenant": "t1", "lang": "en"}));
    let other = session::restore_session(store.as_ref(), "s-1", "mallory", &registered).await;
    assert!(matches!(other, Err(SessionError::NotFound(_))), "{other:?}");
    let merged = ok(
        session::update_context(store.as_ref(), &s, &json!({"lang": "fr", "cart": 2}), now).await,
        "merge",
    );
    assert_eq!(merged.context, json!({"tenant": "t1", "lang": "fr", "cart": 2}));
    assert_eq!((merged.revision, merged.context_revision), (1, 1));
    let stale = session::update_context(store.as_ref(), &s, &json!({"lang": "de"}), now).await;
    assert!(matches!(stale, Err(SessionError::Stale(_))), "{stale:?}");
    let same = ok(
        session::update_context(store.as_ref(), &merged, &json!({"lang": "fr"}), now).await,
        "no-op merge",
    );
    assert_eq!(
        (same.revision, same.context_revision),
        (2, 1),
        "revision advances, context_revision does not"
    );
    let fresh = ok(
        session::rehydrate(store.as_ref(), &same, now, || json!({"tenant": "t2"})).await,
        "rehydrate",
    );
    assert_eq!(
        (fresh.context.clone(), fresh.revision, fresh.context_revision),
        (json!({"tenant": "t2"}), 3, 2)
    );
    assert!(matches!(
        session::update_context(store.as_ref(), &fresh, &json!([1]), now).await,
        Err(SessionError::NotAnObject)
    ));
    // A later write, an hour on, keeps when the Session was created and moves `updated_at`.
    let later = now + chrono::Duration::hours(1);
    ok(
        session::update_context(store.as_ref(), &fresh, &json!({"lang": "it"}), later).await,
        "later",
    );
    let row = ok(store.session_export("s-1").await, "export").unwrap_or_else(|| panic!("no s-1"));
    assert_eq!(row.created_at, now.timestamp_millis(), "created_at moved");
    assert_eq!(row.updated_at, later.timestamp_millis(), "updated_at stood still");
    // A binding to a run that does not exist fails closed.
    ok(
        store
            .execute_once("UPDATE sessions SET active_run_id = 'ghost' WHERE id = 's-1'", &[])
            .await,
        "break",
    );
    let broken = session::restore_session(store.as_ref(), "s-1", "alice", &registered).await;
    assert!(matches!(broken, Err(SessionError::BrokenBinding { .. })), "{broken:?}");
    // A non-terminal run of a workflow this process does not register fails closed too.
    ok(commit(store.as_ref(), "run-1", None, &start("run-1"), None).await, "start");
    ok(
        store
            .execute_once("UPDATE sessions SET active_run_id = 'run-1' WHERE id = 's-1'", &[])
            .await,
        "bind",
    );
    assert!(session::restore_session(store.as_ref(), "s-1", "alice", &registered).await.is_ok());
    let unregistered = session::restore_session(store.as_ref(), "s-1", "alice", &|_| false).await;
    assert!(matches!(unregistered, Err(SessionError::BrokenBinding { .. })), "{unregistered:?}");
}

/// Runs are listed newest first by keyset (pages meet exactly), filtered by status, workflow and
/// owner, and counted by status up to a cap.
pub async fn runs_are_paged_by_keyset_and_counted_by_status(fx: &dyn Fixture) {
    use jadpo_workflow::rows::RunQuery;
    let store = migrated(fx).await;
    let mut runs = Vec::new(); // (id, owner, status), oldest first
    for n in 0..12 {
        let id = format!("0190a000-0000-7000-8000-{n:012}");
        let owner = if n % 3 == 0 { "user:bea" } else { "service:shop" };
        let t = start(&id);
        let write = TransitionWrite {
            owner: Some(owner),
            actor: Some(owner),
            run_id: &id,
            expected_revision: None,
            transition: &t,
            session: None,
            lease: None,
        };
        ok(store.commit_transition(&write).await, "start");
        let mut state = t.state;
        if n % 4 == 0 {
            let cancel = Incoming::Cancel { reason: "test".into() };
            let c = ok(decide(&checkout(), Some(&state), &cancel, &id, 2_000), "cancel");
            ok(commit(store.as_ref(), &id, Some(state.revision), &c, None).await, "cancel");
            state = c.state;
        }
        runs.push((id, owner, state.status));
    }
    let newest_first = |keep: &dyn Fn(&(String, &str, _)) -> bool| -> Vec<String> {
        runs.iter().rev().filter(|r| keep(r)).map(|r| r.0.clone()).collect()
    };
    let pages = |query: RunQuery| {
        let store = Arc::clone(&store);
        async move {
            let (mut all, mut query) = (Vec::new(), RunQuery { limit: 5, ..query });
            loop {
                let page = ok(store.runs_page(&query).await, "page");
                assert!(page.len() <= 5, "a page holds at most its limit");
                let Some(last) = page.last() else { return all };
                query.before = Some(last.run_id.clone());
                all.extend(page.into_iter().map(|r| r.run_id));
            }
        }
    };
    assert_eq!(pages(RunQuery::default()).await, newest_first(&|_| true));
    let first = ok(store.runs_page(&RunQuery { limit: 1, ..RunQuery::default() }).await, "one");
    let newest = &runs[11];
    assert_eq!(
        first.iter().map(|r| (&r.run_id, r.owner.as_deref(), r.status)).collect::<Vec<_>>(),
        vec![(&newest.0, Some(newest.1), newest.2)]
    );
    assert_eq!(
        (first[0].workflow_id.as_str(), first[0].workflow_version.as_str()),
        ("checkout", "1")
    );
    let cancelled = runs[0].2;
    let by_status = RunQuery { status: Some(cancelled), ..RunQuery::default() };
    assert_eq!(pages(by_status).await, newest_first(&|r| r.2 == cancelled));
    let bea = RunQuery { owner: Some("user:bea".into()), ..RunQuery::default() };
    assert_eq!(pages(bea).await, newest_first(&|r| r.1 == "user:bea"));
    let both = RunQuery {
        status: Some(cancelled),
        owner: Some("service:shop".into()),
        workflow: Some("checkout".into()),
        ..RunQuery::default()
    };
    assert_eq!(pages(both).await, newest_first(&|r| r.2 == cancelled && r.1 == "service:shop"));
    let other = RunQuery { workflow: Some("refund".into()), ..RunQuery::default() };
    assert!(pages(other).await.is_empty(), "no runs of another workflow");
    let counts = ok(store.runs_by_status(100).await, "counts");
    for (status, n) in &counts {
        let expected = runs.iter().filter(|r| r.2 == *status).count() as u64;
        assert_eq!(*n, expected, "{status:?}");
    }
    assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), 12, "{counts:?}");
    let capped = ok(store.runs_by_status(2).await, "capped");
    assert!(capped.iter().all(|(_, n)| *n <= 2), "{capped:?}");
    assert!(capped.iter().any(|(_, n)| *n == 2), "{capped:?}");
}
