//! Workflow runs in the console: the list (one store at a time, newest first, by keyset on the
//! time-ordered run id, filtered by workflow, status and owner), a run's state and its event
//! timeline (a bounded page at a time), and Cancel — the engine's operator cancel, the one
//! `jadpo runs cancel` calls, recorded as `run.cancel` with the console operator's name.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use jadpo_engine::workflow::cancel::cancel_as_operator;
use jadpo_engine::workflow::runs::EngineError;
use jadpo_workflow::rows::{RunQuery, RunSummary};
use jadpo_workflow::state::{ExecutionState, ExecutionStatus};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};

use crate::access::Signed;
use crate::filter::given;
use crate::layout::{page, when};
use crate::{ConsoleState, csrf_refusal};

/// How many runs a page shows.
const PAGE: u32 = 50;
/// How many events a timeline page shows.
const EVENTS: u32 = 100;

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/console/runs", get(list))
        .route("/console/runs/{id}", get(show))
        .route("/console/runs/{id}/cancel", post(cancel))
}

/// The list's query.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
struct RunFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    store: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workflow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before: Option<String>,
}

impl RunFilter {
    fn query(&self) -> Result<RunQuery, String> {
        let status = match given(self.status.as_ref()) {
            None => None,
            Some(s) => Some(
                ExecutionStatus::parse(&s).ok_or_else(|| format!("{s:?} is not a run status"))?,
            ),
        };
        Ok(RunQuery {
            status,
            workflow: given(self.workflow.as_ref()),
            owner: given(self.owner.as_ref()),
            before: given(self.before.as_ref()),
            limit: PAGE,
        })
    }

    fn href(&self) -> String {
        format!("/console/runs?{}", serde_urlencoded::to_string(self).unwrap_or_default())
    }
}

/// The time a run's millisecond stamp stands for.
fn at(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), when)
}

fn status_class(status: ExecutionStatus) -> &'static str {
    match status {
        ExecutionStatus::Failed | ExecutionStatus::CancellationFailed => "dead",
        _ => "",
    }
}

fn table(runs: &[RunSummary]) -> Markup {
    html! {
        table {
            tr { th { "run" } th { "workflow" } th { "status" } th { "revision" } th { "node" } th { "owner" } th { "started" } th { "changed" } }
            @for r in runs {
                tr {
                    td { a href={ "/console/runs/" (r.run_id) } { (r.run_id) } }
                    td { (r.workflow_id) " v" (r.workflow_version) }
                    td class=(status_class(r.status)) { (r.status.as_str()) }
                    td { (r.revision) }
                    td { (r.current_node.as_deref().unwrap_or("—")) }
                    td { (r.owner.as_deref().unwrap_or("—")) }
                    td { (when(r.created_at)) }
                    td { (when(r.updated_at)) }
                }
            }
        }
    }
}

fn filter_form(stores: &[&str], f: &RunFilter, store: &str) -> Markup {
    html! {
        form method="get" action="/console/runs" {
            label { "store " select name="store" { @for s in stores { option selected[*s == store] { (s) } } } }
            " " label { "workflow " input name="workflow" value=(f.workflow.as_deref().unwrap_or("")); }
            " " label { "status " select name="status" {
                option value="" { "any" }
                @for s in ExecutionStatus::ALL { option selected[f.status.as_deref() == Some(s.as_str())] { (s.as_str()) } }
            } }
            " " label { "owner " input name="owner" placeholder="user:… or service:…" value=(f.owner.as_deref().unwrap_or("")); }
            " " button type="submit" { "Show" }
        }
    }
}

/// `GET /console/runs`: a page of runs.
async fn list(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<RunFilter>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let filter = query.map(|Query(f)| f).unwrap_or_default();
    let stores = state.engine.app.workflow_stores();
    let store_name = given(filter.store.as_ref())
        .or_else(|| stores.first().map(|s| (*s).to_owned()))
        .unwrap_or_default();
    let refuse = |status, text: String| {
        let body = html! { (filter_form(&stores, &filter, &store_name)) p.error { (text) } };
        (status, page(&state, &signed, "Workflow runs", body)).into_response()
    };
    if !stores.contains(&store_name.as_str()) {
        return refuse(
            StatusCode::NOT_FOUND,
            format!("No store {store_name:?} holds workflow runs here."),
        );
    }
    let query = match filter.query() {
        Ok(q) => q,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e),
    };
    let runs = match state.engine.store(&store_name) {
        Ok(store) => store.runs_page(&query).await,
        Err(e) => Err(e),
    };
    let runs = match runs {
        Ok(runs) => runs,
        Err(e) => {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("The store did not answer: {e}"),
            );
        }
    };
    let older = (runs.len() == PAGE as usize).then(|| RunFilter {
        store: Some(store_name.clone()),
        before: runs.last().map(|r| r.run_id.clone()),
        ..filter.clone()
    });
    let newest = RunFilter { store: Some(store_name.clone()), before: None, ..filter.clone() };
    let body = html! {
        (filter_form(&stores, &filter, &store_name))
        @if runs.is_empty() { p.note { "No runs match." } } @else { (table(&runs)) }
        p {
            @if filter.before.is_some() { a href=(newest.href()) { "Newest" } " " }
            @if let Some(older) = older { a href=(older.href()) { "Older →" } }
        }
    };
    page(&state, &signed, "Workflow runs", body).into_response()
}

#[derive(Deserialize, Default)]
struct ShowQuery {
    done: Option<String>,
    after: Option<u64>,
}

/// The run `id`, the store holding it, and its owner.
async fn find(
    state: &ConsoleState,
    id: &str,
) -> Result<Option<(String, ExecutionState, Option<String>)>, jadpo_core::StoreError> {
    for name in state.engine.app.workflow_stores() {
        let store = state.engine.store(name)?;
        if let Some(run) = store.execution_get(id).await? {
            let owner = store.execution_owner(id).await?;
            return Ok(Some((name.to_owned(), run, owner)));
        }
    }
    Ok(None)
}

fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// `GET /console/runs/{id}`: the run's state, its events (a page at a time) and Cancel.
async fn show(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(id): Path<String>,
    query: Result<Query<ShowQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let ShowQuery { done, after } = query.map(|Query(q)| q).unwrap_or_default();
    let after = after.unwrap_or(0);
    let not_found = |status, text: String| {
        (status, page(&state, &signed, "Workflow run", html! { p.error { (text) } }))
            .into_response()
    };
    let (store, run, owner) = match find(&state, &id).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return not_found(
                StatusCode::NOT_FOUND,
                format!("No run {id} in the stores open here."),
            );
        }
        Err(e) => {
            return not_found(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("The stores did not answer: {e}"),
            );
        }
    };
    let events = match state.engine.store(&store) {
        Ok(s) => s.execution_events_page(&id, after, EVENTS).await,
        Err(e) => Err(e),
    };
    let events = match events {
        Ok(events) => events,
        Err(e) => {
            return not_found(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("The store did not answer: {e}"),
            );
        }
    };
    let next = (events.len() == EVENTS as usize).then(|| events.last().map_or(0, |(e, _)| e.seq));
    let parked = state.engine.app.parked(&run);
    let body = html! {
        @if let Some(done) = done { p.flash { "Done: " (done) "." } }
        table {
            tr { th { "store" } td { (store) } }
            tr { th { "workflow" } td { (run.workflow_id) " version " (run.workflow_version) } }
            tr { th { "status" } td id="run-status" class=(status_class(run.status)) { (run.status.as_str()) } }
            tr { th { "node" } td { (run.current_node_id.as_deref().unwrap_or("—")) } }
            tr { th { "revision" } td { (run.revision) } }
            tr { th { "owner" } td { (owner.as_deref().unwrap_or("—")) } }
            tr { th { "started" } td { (at(run.created_at)) } }
            tr { th { "changed" } td { (at(run.updated_at)) } }
            @if let Some(reason) = &parked { tr { th { "parked" } td.dead { (reason) } } }
        }
        h2 { "Input" } pre { (pretty(&run.input)) }
        h2 { "Data" } pre { (pretty(&run.data)) }
        @if let Some(error) = &run.error { h2 { "Error" } pre { (pretty(error)) } }
        @if let Some(c) = &run.cancellation_state { h2 { "Cancellation" } pre { (pretty(c)) } }
        h2 { "Timeline" }
        table id="timeline" {
            tr { th { "seq" } th { "event" } th { "at" } th { "by" } th { "payload" } }
            @for (e, actor) in &events {
                tr {
                    td { (e.seq) } td { (e.event_type) } td { (at(e.timestamp)) }
                    td { (actor.as_deref().unwrap_or("the runtime")) }
                    td { code { (serde_json::to_string(&e.payload).unwrap_or_default()) } }
                }
            }
        }
        p {
            @if after > 0 { a href={ "/console/runs/" (id) } { "First events" } " " }
            @if let Some(next) = next { a href={ "/console/runs/" (id) "?after=" (next) } { "Later events →" } }
        }
        @if run.status == ExecutionStatus::Cancelling {
            p.note { "Cancelling: compensations run as in-flight steps answer." }
        }
        @if !run.status.is_terminal() && run.status != ExecutionStatus::Cancelling && parked.is_none() {
            h2 { "Change it" }
            form method="post" action={ "/console/runs/" (id) "/cancel" } {
                input type="hidden" name="csrf" value=(signed.csrf);
                label { "reason " input name="reason" required; }
                " " button type="submit" { "Cancel the run" }
                " (completed steps are compensated, latest first)"
            }
        }
    };
    page(&state, &signed, &format!("Run {id}"), body).into_response()
}

#[derive(Deserialize)]
struct CancelForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

/// `POST /console/runs/{id}/cancel` with a reason.
async fn cancel(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<CancelForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&signed, &form.csrf) {
        return refused;
    }
    match cancel_as_operator(&state.engine, &signed.operator, &id, &form.reason).await {
        Ok(_) => Redirect::to(&format!("/console/runs/{id}?done=cancelled")).into_response(),
        Err(e) => {
            let status = match e {
                EngineError::NotFound(_) => StatusCode::NOT_FOUND,
                EngineError::NoReason => StatusCode::BAD_REQUEST,
                EngineError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::CONFLICT,
            };
            let body = html! {
                p.error { "Refused, nothing changed: " (e) }
                p { a href={ "/console/runs/" (id) } { "Back to the run" } }
            };
            (status, page(&state, &signed, "Not done", body)).into_response()
        }
    }
}
