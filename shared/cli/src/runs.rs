//! `jadpo runs list | cancel | delete | adopt` and `jadpo sessions list | adopt`: the workflow runs and
//! Sessions of a store as an operator looks for them (by workflow, status, owner, user, or parked
//! on a version this deployment does not register), newest first; and the changes an operator
//! makes to a run here, its cancellation, its deletion and, for a run or Session without an
//! owner, its adoption by one, each recorded as an operator action.
//! Otherwise a run is changed through the HTTP API as its owner, or by `jadpo import`.

use anyhow::Context;
use clap::Subcommand;
use jadpo_core::Store;
use jadpo_engine::workflow::adopt::{Adoption, adopt_run, adopt_session};
use jadpo_engine::workflow::cancel::cancel_as_operator;
use jadpo_engine::workflow::delete::delete_run;
use jadpo_workflow::rows::{RunExport, RunQuery, SessionExport};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// List runs, newest first: id, workflow, status, revision, owner.
    List {
        /// Only runs of this workflow.
        #[arg(long)]
        workflow: Option<String>,
        /// Only runs with this status: pending, running, waiting, cancelling, completed, failed,
        /// cancelled or cancellation_failed.
        #[arg(long, value_parser = parse_status)]
        status: Option<ExecutionStatus>,
        /// Only runs of this owner (`service:<name>` or `user:<id>`).
        #[arg(long)]
        owner: Option<String>,
        /// Only runs parked: unfinished, on a workflow version this deployment does not
        /// register.
        #[arg(long)]
        parked: bool,
        #[command(flatten)]
        listing: Listing,
    },
    /// Cancel a run (recorded as an operator action): its completed steps' compensations run,
    /// latest first, as for a cancel by its owner. The console's Cancel does the same.
    Cancel {
        /// The run.
        run_id: String,
        /// Why (recorded with the action).
        #[arg(long)]
        reason: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a run with its events, commands and lease (recorded as an operator action); a
    /// Session bound to it is unbound.
    Delete {
        /// The run.
        run_id: String,
        /// Why (recorded with the action).
        #[arg(long)]
        reason: String,
        /// Delete it even if it has not finished (its pending commands go with it).
        #[arg(long)]
        force: bool,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// The store (default: the default store).
        #[arg(long)]
        store: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Give a run that has no owner (made before owners were recorded, or imported) an owner,
    /// so that principal reaches it (recorded as an operator action); an owned run is refused.
    Adopt(AdoptArgs),
}

/// `runs adopt` and `sessions adopt`: which one, whose it becomes, and why.
#[derive(Debug, clap::Args)]
pub(crate) struct AdoptArgs {
    /// The run or Session.
    id: String,
    /// Its owner from now on: `user:<id>` or `service:<name>`.
    #[arg(long)]
    owner: String,
    /// Why (recorded with the action).
    #[arg(long)]
    reason: String,
    /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
    #[arg(long, env = "JADPO_OPERATOR")]
    operator: Option<String>,
    /// The store (default: the default store).
    #[arg(long)]
    store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// List Sessions, newest first: id, user, active run, revisions.
    List {
        /// Only this user's Sessions.
        #[arg(long)]
        user: Option<String>,
        #[command(flatten)]
        listing: Listing,
    },
    /// Give a Session that has no owner an owner (recorded as an operator action); an owned
    /// Session is refused.
    Adopt(AdoptArgs),
}

/// How a listing is shown: how many, from which store, as text or JSON.
#[derive(Debug, clap::Args)]
pub(crate) struct Listing {
    /// At most this many.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    limit: u32,
    /// The store (default: the default store).
    #[arg(long)]
    store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_status(text: &str) -> Result<ExecutionStatus, String> {
    ExecutionStatus::parse(text).ok_or_else(|| {
        let all: Vec<&str> = ExecutionStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("{text:?} is not one of {}", all.join(", "))
    })
}

async fn store_named(store: Option<&str>) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    let app = crate::common::application()?;
    let name = store.unwrap_or(app.default_store()).to_owned();
    let wiring = crate::common::wiring(&app, Some(&name)).await?;
    wiring.stores.get(&name).cloned().context("the store is not configured")
}

/// The runs of `store` that `query`'s filters select, newest first, a page at a time by keyset,
/// until `keep` has taken `limit` of them or none is left.
async fn newest_runs(
    store: &dyn Store,
    mut query: RunQuery,
    limit: usize,
    mut keep: impl FnMut(RunExport) -> bool,
) -> anyhow::Result<()> {
    let mut kept = 0;
    loop {
        let page = store.runs_page(&query).await?;
        let Some(last) = page.last() else { return Ok(()) };
        query.before = Some(last.run_id.clone());
        for summary in &page {
            let Some(run) = store.run_export(&summary.run_id).await? else { continue };
            if keep(run) {
                kept += 1;
                if kept >= limit {
                    return Ok(());
                }
            }
        }
    }
}

fn run_json(r: &RunExport, parked: Option<&str>) -> Value {
    json!({
        "run_id": r.state.run_id, "workflow": r.state.workflow_id,
        "version": r.state.workflow_version, "status": r.state.status.as_str(),
        "revision": r.state.revision, "current_node": r.state.current_node_id, "owner": r.owner,
        "events": r.events.len(), "parked": parked,
    })
}

fn session_json(s: &SessionExport) -> Value {
    json!({
        "id": s.id, "user_id": s.user_id, "active_run_id": s.active_run_id,
        "revision": s.revision, "context_revision": s.context_revision,
    })
}

pub(crate) async fn runs(command: RunsCommand) -> anyhow::Result<()> {
    let (workflow, status, owner, only_parked, listing) = match command {
        RunsCommand::List { workflow, status, owner, parked, listing } => {
            (workflow, status, owner, parked, listing)
        }
        RunsCommand::Delete { run_id, reason, force, operator, store, json } => {
            return delete(&run_id, &reason, force, operator, store.as_deref(), json).await;
        }
        RunsCommand::Cancel { run_id, reason, operator, json } => {
            return cancel(&run_id, &reason, operator, json).await;
        }
        RunsCommand::Adopt(args) => return adopt("run", args).await,
    };
    let app = crate::common::application()?;
    let Listing { limit, store, json } = listing;
    let store = store_named(store.as_deref()).await?;
    let mut found = Vec::new();
    let query = RunQuery { status, workflow, owner, before: None, limit: 200 };
    newest_runs(store.as_ref(), query, limit as usize, |run| {
        let parked = app.parked(&run.state);
        if only_parked && parked.is_none() {
            return false;
        }
        if found.is_empty() && !json {
            say!("{:<36}  {:<16} {:<10} {:<13} OWNER", "RUN", "WORKFLOW", "STATUS", "REVISION");
        }
        if !json {
            say!(
                "{}  {:<16} {:<10} revision {:<4} {}",
                run.state.run_id,
                run.state.workflow_id,
                run.state.status.as_str(),
                run.state.revision,
                run.owner.as_deref().unwrap_or("(no owner)")
            );
            if let Some(reason) = &parked {
                say!("  {reason}");
            }
        }
        found.push(run_json(&run, parked.as_deref()));
        true
    })
    .await?;
    crate::common::end_list(json, "runs", found, "no runs match");
    Ok(())
}

async fn cancel(
    run_id: &str,
    reason: &str,
    operator: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    let operator = crate::common::operator(operator)?;
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, None).await?;
    let p = crate::common::operator_engine(&wiring);
    let state = cancel_as_operator(&p, &operator, run_id, reason).await?;
    let text = format!(
        "run {run_id} is {} at revision {} (recorded as run.cancel by {operator})",
        state.status.as_str(),
        state.revision
    );
    let value =
        json!({"run_id": run_id, "status": state.status.as_str(), "revision": state.revision});
    crate::common::answer(json, &text, &value);
    Ok(())
}

async fn delete(
    run_id: &str,
    reason: &str,
    force: bool,
    operator: Option<String>,
    store: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let operator = crate::common::operator(operator)?;
    let store = store_named(store).await?;
    let clock = jadpo_core::SystemClock;
    let deleted = delete_run(store.as_ref(), &clock, &operator, run_id, reason, force).await?;
    if json {
        say!("{}", json!({"deleted": run_id, "removed": deleted}));
    } else {
        say!(
            "deleted run {run_id}: {} events, {} commands; {} Session(s) unbound (recorded as \
             run.delete by {operator})",
            deleted.events,
            deleted.commands,
            deleted.sessions_unbound
        );
    }
    Ok(())
}

/// Adopts run or Session `args.id` (`kind`) for `args.owner`.
async fn adopt(kind: &str, args: AdoptArgs) -> anyhow::Result<()> {
    let operator = crate::common::operator(args.operator)?;
    let store = store_named(args.store.as_deref()).await?;
    let clock = jadpo_core::SystemClock;
    let adoption = Adoption { owner: &args.owner, reason: &args.reason };
    let id = args.id.as_str();
    if kind == "run" {
        adopt_run(store.as_ref(), &clock, &operator, id, adoption).await?;
    } else {
        adopt_session(store.as_ref(), &clock, &operator, id, adoption).await?;
    }
    let owner = args.owner.trim();
    let text = format!("{kind} {id} is owned by {owner} (recorded as {kind}.adopt by {operator})");
    crate::common::answer(args.json, &text, &json!({kind: id, "owner": owner}));
    Ok(())
}

pub(crate) async fn sessions(command: SessionsCommand) -> anyhow::Result<()> {
    let (user, listing) = match command {
        SessionsCommand::List { user, listing } => (user, listing),
        SessionsCommand::Adopt(args) => return adopt("session", args).await,
    };
    let Listing { limit, store, json } = listing;
    let store = store_named(store.as_deref()).await?;
    let mut found = Vec::new();
    let mut all = Vec::new();
    for id in store.sessions_all().await? {
        if let Some(s) = store.session_export(&id).await? {
            all.push(s);
        }
    }
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    for s in all.iter().filter(|s| user.as_ref().is_none_or(|u| *u == s.user_id)) {
        if found.is_empty() && !json {
            say!("{:<36}  {:<25} ACTIVE RUN / REVISION", "SESSION", "USER");
        }
        if !json {
            let run = s.active_run_id.as_deref().unwrap_or("no active run");
            say!("{}  user {:<20} {run}  revision {}", s.id, s.user_id, s.revision);
        }
        found.push(session_json(s));
        if found.len() >= limit as usize {
            break;
        }
    }
    crate::common::end_list(json, "sessions", found, "no Sessions match");
    Ok(())
}
