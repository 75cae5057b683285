//! `jadpo runs list`, `jadpo runs delete` and `jadpo sessions list`: the workflow runs and
//! Sessions of a store as an operator looks for them (by workflow, status, owner, user, or parked
//! on a version this deployment does not register), newest first; and the one change an operator
//! makes to a run here, its audited deletion. Otherwise a run is changed through the HTTP API as
//! its owner, or by `jadpo import`.

use anyhow::Context;
use clap::Subcommand;
use jadpo_core::Store;
use jadpo_core::model::workflow::rows::{RunExport, SessionExport};
use jadpo_core::model::workflow::state::ExecutionStatus;
use jadpo_engine::workflow::delete::delete_run;
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// List runs, newest first: id, workflow, status, revision, owner.
    List {
        /// Only runs of this workflow.
        #[arg(long)]
        workflow: Option<String>,
        /// Only runs with this status (pending, running, waiting, cancelling, completed, failed,
        /// cancelled).
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
        format!(
            "{text:?} is not one of pending, running, waiting, cancelling, completed, failed, \
             cancelled"
        )
    })
}

async fn store_named(store: Option<&str>) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    let app = crate::common::application()?;
    let name = store.unwrap_or(app.default_store()).to_owned();
    let wiring = crate::common::wiring(&app, Some(&name)).await?;
    wiring.stores.get(&name).cloned().context("the store is not configured")
}

/// Every run id of `store`, oldest first (ids are time-ordered).
async fn run_ids(store: &dyn Store) -> anyhow::Result<Vec<String>> {
    let (mut ids, mut after) = (Vec::new(), String::new());
    loop {
        let page = store.executions_page(&after, 1000).await?;
        let Some(last) = page.last().cloned() else { return Ok(ids) };
        ids.extend(page);
        after = last;
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
    };
    let app = crate::common::application()?;
    let Listing { limit, store, json } = listing;
    let store = store_named(store.as_deref()).await?;
    let mut found = Vec::new();
    for id in run_ids(store.as_ref()).await?.iter().rev() {
        let Some(run) = store.run_export(id).await? else { continue };
        let parked = app.parked(&run.state);
        let wanted = workflow.as_ref().is_none_or(|w| *w == run.state.workflow_id)
            && status.is_none_or(|s| s == run.state.status)
            && owner.as_ref().is_none_or(|o| run.owner.as_ref() == Some(o))
            && (!only_parked || parked.is_some());
        if !wanted {
            continue;
        }
        if found.is_empty() && !json {
            println!("{:<36}  {:<16} {:<10} {:<13} OWNER", "RUN", "WORKFLOW", "STATUS", "REVISION");
        }
        if !json {
            println!(
                "{}  {:<16} {:<10} revision {:<4} {}",
                run.state.run_id,
                run.state.workflow_id,
                run.state.status.as_str(),
                run.state.revision,
                run.owner.as_deref().unwrap_or("(no owner)")
            );
            if let Some(reason) = &parked {
                println!("  {reason}");
            }
        }
        found.push(run_json(&run, parked.as_deref()));
        if found.len() >= limit as usize {
            break;
        }
    }
    crate::common::end_list(json, "runs", found, "no runs match");
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
        println!("{}", json!({"deleted": run_id, "removed": deleted}));
    } else {
        println!(
            "deleted run {run_id}: {} events, {} commands; {} Session(s) unbound (recorded as \
             run.delete by {operator})",
            deleted.events, deleted.commands, deleted.sessions_unbound
        );
    }
    Ok(())
}

pub(crate) async fn sessions(command: SessionsCommand) -> anyhow::Result<()> {
    let SessionsCommand::List { user, listing } = command;
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
            println!("{:<36}  {:<25} ACTIVE RUN / REVISION", "SESSION", "USER");
        }
        if !json {
            let run = s.active_run_id.as_deref().unwrap_or("no active run");
            println!("{}  user {:<20} {run}  revision {}", s.id, s.user_id, s.revision);
        }
        found.push(session_json(s));
        if found.len() >= limit as usize {
            break;
        }
    }
    crate::common::end_list(json, "sessions", found, "no Sessions match");
    Ok(())
}
