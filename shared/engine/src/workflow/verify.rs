//! `jadpo verify`: the specification's eight operational verification checks, run after a
//! migration or a restore, each reported pass or fail with details, and the recovery point (the
//! newest event: its run, revision and time) the runbook asks the operator to record.
//!
//! Histories written before event ids were `${runId}:${seq}` (legacy histories) stay readable
//! without backfill: they are held to uniqueness and to replaying to the same final truth, not
//! to the revision rule that only new-format histories follow. Checks 7 and 8 probe the store's
//! behaviour with a temporary Session and a temporary run, which they delete afterwards; a probe
//! the store fails is that check's failure, not an abort. Everything else only reads. A probe
//! run's id starts with [`PROBE_PREFIX`], which the relay's sweep never sends (its capability
//! command is never put on the queue), and it is deleted with its commands' dispatch rows, as an
//! operator's deletion is: verifying a live store leaves nothing a relay or a worker acts on.

use serde_json::{Value, json};

use crate::migrate;
use jadpo_core::clock::Clock;
use jadpo_core::id::new_id;
use jadpo_core::ports::TransitionError;
use jadpo_core::ports::WorkflowOps;
use jadpo_core::ports::WorkflowStore;
use jadpo_core::{Store, StoreError};
use jadpo_schema::migrate::MigrationCatalog;
use jadpo_workflow::def::{Node, WorkflowDef};
use jadpo_workflow::kernel::{Incoming, decide};
use jadpo_workflow::rows::{RecoveryPoint, RunExport, SessionWrite, TransitionWrite};
use jadpo_workflow::state::{ExecutionState, replay};

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

/// The eight verdicts and the recovery point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Checks 1–8, in order.
    pub checks: Vec<Check>,
    /// The newest event; `None` for a store without events.
    pub recovered: Option<RecoveryPoint>,
}

impl Report {
    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.passed).count()
    }
}

/// Which workflows this deployment registers (a non-terminal run needs its own).
pub type Registered<'a> = &'a (dyn Fn(&str) -> bool + Sync);

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
    registered: Registered<'_>,
) -> Result<Report, StoreError> {
    let runs = check_runs(store).await?;
    let checks = vec![
        check_migrations(store, catalog).await?,
        check_revisions(store, &runs).await?,
        check_event_ids(store).await?,
        check(
            4,
            "materialized state equals ordered replay",
            &runs.diverged,
            format!("{} runs replayed ({} legacy)", runs.replayed, runs.legacy),
        ),
        check(
            5,
            "command rows keep their idempotency identity and timestamps",
            &runs.commands_off,
            format!("{} commands fit their issue and status", runs.commands),
        ),
        check_sessions(store, registered).await?,
        probe_sessions(store, clock).await,
        probe_leases(store, clock).await,
    ];
    Ok(Report { checks, recovered: store.recovery_point().await? })
}

async fn check_migrations(
    store: &dyn Store,
    catalog: &MigrationCatalog,
) -> Result<Check, StoreError> {
    let status =
        migrate::status(store, catalog).await.map_err(|e| StoreError::internal(e.to_string()))?;
    let off: Vec<String> = status
        .iter()
        .filter(|s| s.state.label() != "applied")
        .map(|s| format!("{} {} {} is {}", s.ledger, s.version, s.name, s.state.label()))
        .collect();
    Ok(check(
        1,
        "migration versions are exactly those expected",
        &off,
        format!("{} migrations applied", status.len()),
    ))
}

async fn check_revisions(store: &dyn WorkflowOps, runs: &RunsSeen) -> Result<Check, StoreError> {
    let mismatched: Vec<String> = store
        .verify_revisions()
        .await?
        .into_iter()
        .map(|(run, rev, seq)| format!("run {run} has revision {rev} but last event {seq}"))
        .collect();
    Ok(check(
        2,
        "every new-format execution's revision matches its last event",
        &mismatched,
        format!(
            "{} new-format runs match; {} legacy histories read",
            runs.replayed - runs.legacy,
            runs.legacy
        ),
    ))
}

async fn check_event_ids(store: &dyn WorkflowOps) -> Result<Check, StoreError> {
    let (pairs, ids) = store.verify_event_ids().await?;
    let mut problems = Vec::new();
    if pairs > 0 {
        problems.push(format!("{pairs} (run_id, seq) pairs occur more than once"));
    }
    if ids > 0 {
        problems.push(format!("{ids} event ids occur more than once"));
    }
    Ok(check(
        3,
        "(run_id, seq) and event ids are unique",
        &problems,
        "every (run_id, seq) and every event id is unique".to_owned(),
    ))
}

/// What one pass over every run found, for checks 2, 4 and 5.
#[derive(Debug, Default)]
struct RunsSeen {
    /// Runs with events, replayed.
    replayed: usize,
    /// Of those, legacy histories.
    legacy: usize,
    diverged: Vec<String>,
    commands: usize,
    commands_off: Vec<String>,
}

async fn check_runs(store: &dyn WorkflowOps) -> Result<RunsSeen, StoreError> {
    let mut seen = RunsSeen::default();
    let mut after = String::new();
    loop {
        let page = store.executions_page(&after, 500).await?;
        let Some(last) = page.last().cloned() else { return Ok(seen) };
        for run in page {
            let Some(export) = store.run_export(&run).await? else { continue };
            see_run(&mut seen, &export);
        }
        after = last;
    }
}

fn see_run(seen: &mut RunsSeen, run: &RunExport) {
    let id = &run.state.run_id;
    for c in &run.commands {
        seen.commands += 1;
        if let Err(why) = command_fits(run, c) {
            seen.commands_off.push(format!("command {} of run {id} {why}", c["id"]));
        }
    }
    if run.events.is_empty() {
        return; // a history from before events were kept: nothing to replay
    }
    seen.replayed += 1;
    let legacy = !run.is_new_format();
    seen.legacy += usize::from(legacy);
    let replayed = replay(id, &run.events);
    let same = match (&replayed, legacy) {
        (Some(r), false) => *r == run.state,
        (Some(r), true) => final_truth(r) == final_truth(&run.state),
        (None, _) => false,
    };
    if !same {
        seen.diverged.push(format!("run {id} replays to a different state"));
    }
}

/// A legacy history's final truth: what it did and holds, not how its revision and times were
/// counted then.
fn final_truth(s: &ExecutionState) -> ExecutionState {
    ExecutionState { revision: 0, created_at: 0, updated_at: 0, ..s.clone() }
}

const COMMAND_STATUSES: [&str; 4] = ["pending", "claimed", "completed", "failed"];

/// A command row against its status rules and the `command.issued` event that created it.
fn command_fits(run: &RunExport, c: &Value) -> Result<(), String> {
    let status = c["status"].as_str().unwrap_or_default();
    if !COMMAND_STATUSES.contains(&status) {
        return Err(format!("has the unknown status {status:?}"));
    }
    let (created, processed) = (c["created_at"].as_i64(), c["processed_at"].as_i64());
    match (status, processed) {
        ("pending" | "claimed", Some(_)) => return Err(format!("is {status} but processed")),
        ("completed" | "failed", None) => return Err(format!("is {status} without processed_at")),
        (_, Some(p)) if created.is_some_and(|c| p < c) => {
            return Err("was processed before it was created".to_owned());
        }
        _ => {}
    }
    let issued = run
        .events
        .iter()
        .find(|e| e.event_type == "command.issued" && e.payload["command_id"] == c["id"]);
    let Some(issued) = issued else {
        // A legacy history may predate the event; a new-format one may not.
        return match run.is_new_format() {
            true => Err("has no command.issued event".to_owned()),
            false => Ok(()),
        };
    };
    let p = &issued.payload;
    if p["idempotency_key"] != c["idempotency_key"] {
        return Err(format!(
            "has idempotency key {} but was issued with {}",
            c["idempotency_key"], p["idempotency_key"]
        ));
    }
    if p["node"] != c["node_id"] || p["capability"] != c["type"] {
        return Err("names another node or capability than its command.issued event".to_owned());
    }
    Ok(())
}

async fn check_sessions(
    store: &dyn Store,
    registered: Registered<'_>,
) -> Result<Check, StoreError> {
    let sessions = store.sessions_all().await?;
    let mut problems = Vec::new();
    for id in &sessions {
        let Some(s) = store.session_get(id).await? else { continue };
        match session::restore_session(store, id, &s.user_id, registered).await {
            Ok(r) if r.context.is_object() && !r.user_id.is_empty() => {}
            Ok(_) => problems.push(format!("session {id} has no owner or a non-object context")),
            Err(e) => problems.push(e.to_string()),
        }
    }
    Ok(check(
        6,
        "session context loads for its user",
        &problems,
        format!("{} sessions load for their users", sessions.len()),
    ))
}

/// What every probe's id starts with; the relay's sweep skips runs whose id does
/// (`commands_claim_due`), so a probe's command is never sent.
pub const PROBE_PREFIX: &str = "jadpo-verify-";

fn probe_id(clock: &dyn Clock) -> String {
    format!("{PROBE_PREFIX}{}", new_id(clock))
}

/// Deletes probe run `run` with its events, commands, lease and dispatch rows.
async fn delete_probe_run(
    store: &dyn Store,
    clock: &dyn Clock,
    run: &str,
) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    let deleted = store.execution_delete_in(tx.as_mut(), run, clock.now()).await;
    jadpo_core::transaction::commit_or_rollback(tx, deleted).await.map(|_| ())
}

async fn probe_sessions(store: &dyn Store, clock: &dyn Clock) -> Check {
    let id = probe_id(clock);
    let mut problems = match session_probe(store, clock, &id).await {
        Ok(problems) => problems,
        Err(e) => vec![format!("the store failed the probe: {e}")],
    };
    if let Err(e) = store.session_delete(&id).await {
        problems.push(format!("cannot delete the probe session: {e}"));
    }
    check(
        7,
        "session revisions round-trip; stale and wrong-owner writes roll back",
        &problems,
        "probe session behaved".to_owned(),
    )
}

async fn session_probe(
    store: &dyn Store,
    clock: &dyn Clock,
    id: &str,
) -> Result<Vec<String>, StoreError> {
    let registered = |_: &str| true;
    let mut problems = Vec::new();
    let s = match session::load_or_create_session(
        store,
        id,
        "verify",
        clock.now(),
        &registered,
        || json!({"probe": 1}),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return Ok(vec![format!("cannot create a probe session: {e}")]),
    };
    let updated = session::update_context(store, &s, &json!({"probe": 2}), clock.now()).await;
    let u = match updated {
        Ok(u) if u.revision == s.revision + 1 && u.context_revision == s.context_revision + 1 => u,
        other => return Ok(vec![format!("a context update did not round-trip: {other:?}")]),
    };
    if !matches!(
        session::update_context(store, &s, &json!({"probe": 3}), clock.now()).await,
        Err(SessionError::Stale(_))
    ) {
        problems.push("a stale write was accepted".to_owned());
    }
    let wrong = json!({"probe": "someone else"});
    if store
        .session_update_context(id, "someone-else", &wrong, u.revision, true, clock.now())
        .await?
    {
        problems.push("another user's context write was accepted".to_owned());
    }
    if let Some(problem) = wrong_owner_start(store, clock, id, u.revision).await? {
        problems.push(problem);
    }
    match store.session_get(id).await? {
        Some(now) if now == u => {}
        other => problems.push(format!("refused writes changed the session: {other:?}")),
    }
    Ok(problems)
}

/// A run started in the probe Session by another user must roll back whole.
async fn wrong_owner_start(
    store: &dyn Store,
    clock: &dyn Clock,
    session_id: &str,
    revision: i64,
) -> Result<Option<String>, StoreError> {
    let run = probe_id(clock);
    let def = probe_def("jadpo.verify.wait", wait_node())?;
    let session = SessionWrite {
        session_id: session_id.to_owned(),
        user_id: "someone-else".to_owned(),
        expected_revision: revision,
    };
    let now = clock.now().timestamp_millis();
    let started = start_probe(store, &def, &run, now, Some(session)).await?;
    let refused = matches!(started, Err(TransitionError::SessionNotFound(_)));
    let left = store.execution_get(&run).await?.is_some();
    if left {
        delete_probe_run(store, clock, &run).await?;
    }
    Ok(match (refused, left) {
        (true, false) => None,
        _ => Some("another user's start in the session was not rolled back".to_owned()),
    })
}

/// Starts probe run `run` of `def` at `now_ms`, in `session` when given: the store's verdict, or
/// the error of a definition the kernel refuses.
async fn start_probe(
    store: &dyn WorkflowStore,
    def: &WorkflowDef,
    run: &str,
    now_ms: i64,
    session: Option<SessionWrite>,
) -> Result<Result<(), TransitionError>, StoreError> {
    let t = decide(def, None, &Incoming::Start { input: json!({}) }, run, now_ms)
        .map_err(|e| StoreError::internal(e.to_string()))?;
    let write = TransitionWrite {
        owner: None,
        actor: None,
        run_id: run,
        expected_revision: None,
        transition: &t,
        session,
        lease: None,
    };
    Ok(store.commit_transition(&write).await)
}

fn wait_node() -> Node {
    Node::Wait { event: "never".into(), output: "x".into(), next: "done".into() }
}

fn probe_def(id: &str, first: Node) -> Result<WorkflowDef, StoreError> {
    WorkflowDef::builder(id, "1", "first")
        .node("first", first)
        .node("done", Node::Complete)
        .build()
        .map_err(|e| StoreError::internal(e.to_string()))
}

async fn probe_leases(store: &dyn Store, clock: &dyn Clock) -> Check {
    let run = probe_id(clock);
    let mut problems = match lease_probe(store, clock, &run).await {
        Ok(problems) => problems,
        Err(e) => vec![format!("the store failed the probe: {e}")],
    };
    if let Err(e) = delete_probe_run(store, clock, &run).await {
        problems.push(format!("cannot delete the probe run: {e}"));
    }
    check(
        8,
        "expired leases are discoverable; live leases exclude others",
        &problems,
        "probe leases behaved".to_owned(),
    )
}

/// The probe run is running (a capability node, never sent: its capability is not declared) and
/// dated at the epoch, so that discovery, oldest first, lists it before any real run.
async fn lease_probe(
    store: &dyn WorkflowStore,
    clock: &dyn Clock,
    run: &str,
) -> Result<Vec<String>, StoreError> {
    let task = Node::Capability {
        capability: "jadpo.verify.probe".into(),
        inputs: Vec::new(),
        idempotency_key: None,
        output: "x".into(),
        next: "done".into(),
        on_failure: None,
        compensate: None,
    };
    let def = probe_def("jadpo.verify.lease", task)?;
    if let Err(e) = start_probe(store, &def, run, 1, None).await? {
        return Ok(vec![format!("cannot create a probe run: {e}")]);
    }
    let now = clock.now().timestamp_millis();
    let mut problems = Vec::new();
    if store.run_lease_take(run, "verify-a", now, now + 1_000).await?.is_none() {
        return Ok(vec!["a free lease could not be acquired".to_owned()]);
    }
    if store.run_lease_take(run, "verify-b", now + 10, now + 1_000).await?.is_some() {
        problems.push("a live lease did not exclude a competing owner".to_owned());
    }
    if store.runs_runnable(now + 10, 100).await?.iter().any(|r| r == run) {
        problems.push("a run under a live lease was listed as runnable".to_owned());
    }
    if !store.runs_runnable(now + 2_000, 100).await?.iter().any(|r| r == run) {
        problems.push("a run whose lease expired was not discovered".to_owned());
    }
    if store.run_lease_take(run, "verify-b", now + 2_000, now + 3_000).await?.is_none() {
        problems.push("an expired lease was not taken over".to_owned());
    }
    Ok(problems)
}
