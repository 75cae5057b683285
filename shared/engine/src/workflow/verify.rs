//! `jadpo verify`: the specification's eight operational verification checks, run after a
//! migration or a restore, each reported pass or fail with details.
//!
//! Checks 7 and 8 probe the store's behaviour with a temporary Session and a temporary run,
//! which they delete afterwards; everything else only reads.

use serde_json::json;

use crate::migrate;
use jadpo_core::clock::Clock;
use jadpo_core::id::new_id;
use jadpo_core::model::migrate::MigrationCatalog;
use jadpo_core::model::workflow::def::{Node, WorkflowDef};
use jadpo_core::model::workflow::kernel::{Incoming, decide};
use jadpo_core::model::workflow::rows::TransitionWrite;
use jadpo_core::model::workflow::state::replay;
use jadpo_core::{Store, StoreError};

use super::session::{self, SessionError};

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The spec's number (1–8).
    pub number: u8,
    /// What it checks.
    pub name: &'static str,
    /// Whether it passed.
    pub passed: bool,
    /// What was found.
    pub details: String,
}

fn check(number: u8, name: &'static str, problems: &[String], ok: String) -> Check {
    let passed = problems.is_empty();
    let details = if passed { ok } else { problems.join("; ") };
    Check { number, name, passed, details }
}

/// Runs the eight checks against `store`, whose expected migrations are `catalog`.
pub async fn verify(
    store: &dyn Store,
    catalog: &MigrationCatalog,
    clock: &dyn Clock,
) -> Result<Vec<Check>, StoreError> {
    let mut out = Vec::new();
    let status =
        migrate::status(store, catalog).await.map_err(|e| StoreError::internal(e.to_string()))?;
    let off: Vec<String> = status
        .iter()
        .filter(|s| s.state.label() != "applied")
        .map(|s| format!("{} {} {} is {}", s.ledger, s.version, s.name, s.state.label()))
        .collect();
    out.push(check(
        1,
        "migration versions are exactly those expected",
        &off,
        format!("{} migrations applied", status.len()),
    ));

    let mismatched: Vec<String> = store
        .verify_revisions()
        .await?
        .into_iter()
        .map(|(run, rev, seq)| format!("run {run} has revision {rev} but last event {seq}"))
        .collect();
    out.push(check(
        2,
        "every execution's revision matches its last event",
        &mismatched,
        "all revisions match".to_owned(),
    ));

    let bad_ids = store.verify_event_ids().await?;
    let problems = if bad_ids == 0 {
        vec![]
    } else {
        vec![format!("{bad_ids} events with a wrong id or a repeated (run_id, seq)")]
    };
    out.push(check(
        3,
        "(run_id, seq) and event ids are unique",
        &problems,
        "all event ids are ${runId}:${seq}".to_owned(),
    ));

    let (replayed, diverged) = replay_all(store).await?;
    out.push(check(
        4,
        "materialized state equals ordered replay",
        &diverged,
        format!("{replayed} runs replayed"),
    ));

    let commands: Vec<String> = store
        .verify_command_times()
        .await?
        .into_iter()
        .map(|(id, status)| format!("command {id} is {status} with the wrong processed_at"))
        .collect();
    out.push(check(
        5,
        "command rows keep their identity and timestamps",
        &commands,
        "command timestamps fit their status".to_owned(),
    ));

    let sessions = store.sessions_all().await?;
    let mut unreadable = Vec::new();
    for id in &sessions {
        match store.session_get(id).await? {
            Some(s) if s.context.is_object() && !s.user_id.is_empty() => {}
            _ => unreadable
                .push(format!("session {id} does not load with an owner and an object context")),
        }
    }
    out.push(check(
        6,
        "session context loads for its user",
        &unreadable,
        format!("{} sessions load", sessions.len()),
    ));

    out.push(probe_sessions(store, clock).await?);
    out.push(probe_leases(store, clock).await?);
    Ok(out)
}

async fn replay_all(store: &dyn Store) -> Result<(usize, Vec<String>), StoreError> {
    let mut after = String::new();
    let (mut count, mut diverged) = (0, Vec::new());
    loop {
        let page = store.executions_page(&after, 500).await?;
        let Some(last) = page.last().cloned() else { return Ok((count, diverged)) };
        for run in page {
            let events = store.execution_events(&run).await?;
            if events.is_empty() {
                continue; // a legacy history without events stays readable
            }
            count += 1;
            let state = store.execution_get(&run).await?;
            if replay(&run, &events) != state {
                diverged.push(format!("run {run} replays to a different state"));
            }
        }
        after = last;
    }
}

async fn probe_sessions(store: &dyn Store, clock: &dyn Clock) -> Result<Check, StoreError> {
    let id = format!("jadpo-verify-{}", new_id(clock));
    let registered = |_: &str| true;
    let mut problems = Vec::new();
    let created = session::load_or_create_session(
        store,
        &id,
        "verify",
        clock.now(),
        &registered,
        || json!({"probe": 1}),
    )
    .await;
    match created {
        Ok(s) => {
            let updated =
                session::update_context(store, &s, &json!({"probe": 2}), clock.now()).await;
            match &updated {
                Ok(u)
                    if u.revision == s.revision + 1
                        && u.context_revision == s.context_revision + 1 => {}
                other => problems.push(format!("a context update did not round-trip: {other:?}")),
            }
            if !matches!(
                session::update_context(store, &s, &json!({"probe": 3}), clock.now()).await,
                Err(SessionError::Stale(_))
            ) {
                problems.push("a stale write was accepted".to_owned());
            }
            if !matches!(
                session::restore_session(store, &id, "someone-else", &registered).await,
                Err(SessionError::NotFound(_))
            ) {
                problems.push("another user restored the session".to_owned());
            }
        }
        Err(e) => problems.push(format!("cannot create a probe session: {e}")),
    }
    store.session_delete(&id).await?;
    Ok(check(
        7,
        "session revisions round-trip; stale and wrong-owner writes roll back",
        &problems,
        "probe session behaved".to_owned(),
    ))
}

async fn probe_leases(store: &dyn Store, clock: &dyn Clock) -> Result<Check, StoreError> {
    let run = format!("jadpo-verify-{}", new_id(clock));
    let mut problems = Vec::new();
    let def = WorkflowDef::builder("jadpo.verify", "1", "wait")
        .node("wait", Node::Wait { event: "never".into(), output: "x".into(), next: "done".into() })
        .node("done", Node::Complete)
        .build()
        .map_err(|e| StoreError::internal(e.to_string()))?;
    let now = clock.now().timestamp_millis();
    let t = decide(&def, None, &Incoming::Start { input: json!({}) }, &run, now)
        .map_err(|e| StoreError::internal(e.to_string()))?;
    let write = TransitionWrite {
        owner: None,
        actor: None,
        run_id: &run,
        expected_revision: None,
        transition: &t,
        session: None,
        lease: None,
    };
    if let Err(e) = store.commit_transition(&write).await {
        problems.push(format!("cannot create a probe run: {e}"));
    } else {
        match store.run_lease_take(&run, "verify-a", now, now + 1_000).await? {
            Some(_) => {
                if store.run_lease_take(&run, "verify-b", now + 10, now + 1_000).await?.is_some() {
                    problems.push("a live lease did not exclude a competing owner".to_owned());
                }
                if store.run_lease_take(&run, "verify-b", now + 2_000, now + 3_000).await?.is_none()
                {
                    problems.push("an expired lease was not taken over".to_owned());
                }
            }
            None => problems.push("a free lease could not be acquired".to_owned()),
        }
    }
    store.execution_delete(&run).await?;
    Ok(check(
        8,
        "expired leases are discoverable; live leases exclude others",
        &problems,
        "probe leases behaved".to_owned(),
    ))
}
