//! Schedules and circuit breakers in the console: each schedule with its recorded runs and
//! skipped ticks, Pause, Resume and Trigger through [`ScheduleOps`]; each connection's breaker
//! in every store, Open and Close through [`BreakerOps`], and the deliveries it holds, listed and
//! released through [`DeliveryOps`] — the use cases `jadpo schedules`, `jadpo breakers` and
//! `jadpo deliveries release` call, recorded as operator actions with the console operator's
//! name.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use jadpo_core::model::breaker::State as BreakerState;
use jadpo_engine::operate::breakers::{BreakerOpError, BreakerOps};
use jadpo_engine::operate::deliveries::{DeliveryOpError, DeliveryOps};
use jadpo_engine::schedule::{ScheduleOpError, ScheduleOps, sync};
use maud::html;
use serde::Deserialize;

use crate::access::Signed;
use crate::layout::{maybe, page, unavailable, when};
use crate::{ConsoleState, csrf_refusal};

/// How many runs and skipped ticks a schedule's page shows.
const RUNS: u32 = 100;

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/console/schedules", get(list))
        .route("/console/schedules/{name}", get(show))
        .route("/console/schedules/{name}/{verb}", post(act))
        .route("/console/breakers", get(breakers))
        .route("/console/breakers/{connection}/{verb}", post(force))
}

#[derive(Deserialize, Default)]
struct Done {
    done: Option<String>,
}

fn done_of(query: Result<Query<Done>, axum::extract::rejection::QueryRejection>) -> Option<String> {
    query.ok().and_then(|Query(d)| d.done)
}

#[derive(Deserialize)]
struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

/// A refusal with nothing changed, and the way back.
fn refused(
    state: &ConsoleState,
    signed: &Signed,
    status: StatusCode,
    e: &dyn std::fmt::Display,
    back: &str,
) -> Response {
    let body =
        html! { p.error { "Refused, nothing changed: " (e) } p { a href=(back) { "Back" } } };
    (status, page(state, signed, "Not done", body)).into_response()
}

/// `GET /console/schedules`: every stored schedule, its timing, state and ticks.
async fn list(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<Done>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let store_name = state.engine.app.schedule_store().to_owned();
    let rows = match state.engine.store(&store_name) {
        Ok(store) => store.schedules_list().await,
        Err(e) => Err(e),
    };
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => return unavailable(&state, &signed, "Schedules", &e),
    };
    let declared: Vec<&str> = state
        .engine
        .app
        .schedules()
        .map(|s| s.name.as_str())
        .filter(|n| !rows.iter().any(|r| r.name == *n))
        .collect();
    let body = html! {
        @if let Some(done) = done_of(query) { p.flash { "Done: " (done) "." } }
        p.note { "In store " (store_name) "." }
        table {
            tr { th { "schedule" } th { "state" } th { "timing" } th { "event" } th { "next tick" } th { "last tick" } }
            @for r in &rows {
                tr {
                    td { a href={ "/console/schedules/" (r.name) } { (r.name) } }
                    td class=(if r.state() == "active" { "" } else { "dead" }) { (r.state()) }
                    td { code { (r.expression) } } td { (r.event_type) }
                    td { (when(r.next_due_at)) } td { (maybe(r.last_tick_at)) }
                }
            }
            @for name in &declared {
                tr { td { a href={ "/console/schedules/" (name) } { (name) } } td { "declared" } td colspan="4" { "stored by the next tick or any change" } }
            }
        }
    };
    page(&state, &signed, "Schedules", body).into_response()
}

/// `GET /console/schedules/{name}`: the schedule, its runs and skipped ticks, and its changes.
async fn show(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(name): Path<String>,
    query: Result<Query<Done>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let title = format!("Schedule {name}");
    if state.engine.app.schedules().all(|s| s.name != name) {
        let body = html! { p.error { "The application declares no schedule " (name) "." } };
        return (StatusCode::NOT_FOUND, page(&state, &signed, &title, body)).into_response();
    }
    let store = match state.engine.store(state.engine.app.schedule_store()) {
        Ok(store) => store,
        Err(e) => return unavailable(&state, &signed, &title, &e),
    };
    let (row, runs) =
        match (store.schedules_list().await, store.schedule_runs(Some(&name), RUNS).await) {
            (Ok(rows), Ok(runs)) => (rows.into_iter().find(|r| r.name == name), runs),
            (Err(e), _) | (_, Err(e)) => return unavailable(&state, &signed, &title, &e),
        };
    let paused = row.as_ref().is_some_and(|r| r.paused_at.is_some());
    let body = html! {
        @if let Some(done) = done_of(query) { p.flash { "Done: " (done) "." } }
        @if let Some(r) = &row {
            table {
                tr { th { "state" } td id="schedule-state" { (r.state()) } }
                tr { th { "timing" } td { code { (r.expression) } } }
                tr { th { "event" } td { (r.event_type) } }
                tr { th { "next tick" } td { (when(r.next_due_at)) } }
                tr { th { "last tick" } td { (maybe(r.last_tick_at)) } }
                tr { th { "paused" } td { (maybe(r.paused_at)) } }
            }
        } @else { p.note { "Not stored yet: the next tick, or any change here, stores it." } }
        h2 { "Change it" }
        @for verb in [if paused { "resume" } else { "pause" }, "trigger"] {
            form method="post" action={ "/console/schedules/" (name) "/" (verb) } {
                input type="hidden" name="csrf" value=(signed.csrf);
                button type="submit" { (verb_label(verb)) }
            }
        }
        h2 { "Runs and skipped ticks" }
        @if runs.is_empty() { p.note { "None recorded." } } @else {
            table {
                tr { th { "tick" } th { "status" } th { "trigger" } th { "reason" } th { "event" } }
                @for r in &runs {
                    tr {
                        td { (when(r.tick_at)) }
                        td class=(if r.status == "skipped" { "dead" } else { "" }) { (r.status) }
                        td { (r.trigger) } td { (r.reason.as_deref().unwrap_or("")) }
                        td { (r.outbox_id.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    };
    page(&state, &signed, &title, body).into_response()
}

fn verb_label(verb: &str) -> &'static str {
    match verb {
        "pause" => "Pause",
        "resume" => "Resume",
        "open" => "Open (hold its deliveries)",
        "close" => "Close (release held deliveries)",
        "release" => "Release held deliveries (breaker unchanged)",
        _ => "Trigger a run now",
    }
}

/// `POST /console/schedules/{name}/{pause|resume|trigger}`.
async fn act(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path((name, verb)): Path<(String, String)>,
    axum::Form(form): axum::Form<CsrfOnly>,
) -> Response {
    if let Some(refusal) = csrf_refusal(&signed, &form.csrf) {
        return refusal;
    }
    let back = format!("/console/schedules/{name}");
    // As the CLI's verbs do: declared schedules are stored (and removed ones marked) first.
    if let Err(e) = sync(&state.engine).await {
        return refused(&state, &signed, StatusCode::SERVICE_UNAVAILABLE, &e, &back);
    }
    let ops = ScheduleOps::new(&state.engine, &signed.operator);
    let result = match verb.as_str() {
        "pause" => ops.pause(&name).await.map(|_| "paused".to_owned()),
        "resume" => ops.resume(&name).await.map(|_| "resumed".to_owned()),
        "trigger" => ops.trigger(&name).await.map(|event| format!("triggered (event {event})")),
        _ => {
            return (StatusCode::NOT_FOUND, crate::layout::message("Not found", "No such change."))
                .into_response();
        }
    };
    match result {
        Ok(done) => Redirect::to(&format!(
            "{back}?{}",
            serde_urlencoded::to_string([("done", done)]).unwrap_or_default()
        ))
        .into_response(),
        Err(e) => {
            let status = match e {
                ScheduleOpError::Unknown(_) => StatusCode::NOT_FOUND,
                ScheduleOpError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::CONFLICT,
            };
            refused(&state, &signed, status, &e, &back)
        }
    }
}

/// `GET /console/breakers`: every connection's breaker in every store, with Open and Close.
async fn breakers(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<Done>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let mut rows = Vec::new();
    for (name, store) in &state.engine.stores {
        match store.breakers_list().await {
            Ok(list) => rows.extend(list.into_iter().map(|b| (name.clone(), b))),
            Err(e) => return unavailable(&state, &signed, "Circuit breakers", &e),
        }
    }
    let connections = state.engine.app.connections();
    let body = html! {
        @if let Some(done) = done_of(query) { p.flash { "Done: " (done) "." } }
        @if rows.is_empty() { p.note { "No breaker has been stored yet: every connection is closed." } } @else {
            table {
                tr { th { "store" } th { "connection" } th { "state" } th { "failures" } th { "opened" } th { "next probe" } }
                @for (store, b) in &rows {
                    tr {
                        td { (store) } td { (b.connection) }
                        td class=(if b.state == BreakerState::Closed { "" } else { "dead" }) { (b.state.as_str()) }
                        td { (b.failures) } td { (maybe(b.opened_at)) } td { (maybe(b.reopen_at)) }
                    }
                }
            }
        }
        h2 { "Change one" }
        @if connections.is_empty() { p.note { "The application declares no connections." } }
        @for c in connections {
            p { (c) " "
                a href={ "/console/deliveries?status=pending&held=" (c) } { "held deliveries" } " "
                @for verb in ["open", "close", "release"] {
                    form method="post" action={ "/console/breakers/" (c) "/" (verb) } style="display:inline" {
                        input type="hidden" name="csrf" value=(signed.csrf);
                        button type="submit" { (verb_label(verb)) }
                    }
                    " "
                }
            }
        }
    };
    page(&state, &signed, "Circuit breakers", body).into_response()
}

/// `POST /console/breakers/{connection}/{open|close}`.
async fn force(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path((connection, verb)): Path<(String, String)>,
    axum::Form(form): axum::Form<CsrfOnly>,
) -> Response {
    if let Some(refusal) = csrf_refusal(&signed, &form.csrf) {
        return refusal;
    }
    if verb == "release" {
        return release(&state, &signed, &connection).await;
    }
    let ops = BreakerOps::new(&state.engine, &signed.operator);
    let result = match verb.as_str() {
        "open" => ops.open(&connection).await,
        "close" => ops.close(&connection).await,
        _ => {
            return (StatusCode::NOT_FOUND, crate::layout::message("Not found", "No such change."))
                .into_response();
        }
    };
    match result {
        Ok(forced) => {
            let released: u64 = forced.iter().map(|f| f.released).sum();
            let past = if verb == "open" { "opened" } else { "closed" };
            let done = format!(
                "{connection} {past} in {} store(s), {released} held deliveries released",
                forced.len()
            );
            Redirect::to(&format!(
                "/console/breakers?{}",
                serde_urlencoded::to_string([("done", done)]).unwrap_or_default()
            ))
            .into_response()
        }
        Err(e) => {
            let status = match e {
                BreakerOpError::UnknownConnection(_) => StatusCode::NOT_FOUND,
                BreakerOpError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            refused(&state, &signed, status, &e, "/console/breakers")
        }
    }
}

/// Releases the deliveries `connection`'s breaker holds in every store, as `jadpo deliveries
/// release` does (the breaker stays as it is: a released delivery may be held again).
async fn release(state: &ConsoleState, signed: &Signed, connection: &str) -> Response {
    let ops = DeliveryOps::new(&state.engine, &signed.operator);
    match ops.release(connection).await {
        Ok(released) => {
            let n: usize = released.iter().map(|(_, ids)| ids.len()).sum();
            let done = format!("{n} held deliveries of {connection} released");
            let query = serde_urlencoded::to_string([("done", done)]).unwrap_or_default();
            Redirect::to(&format!("/console/breakers?{query}")).into_response()
        }
        Err(e) => {
            let status = match e {
                DeliveryOpError::UnknownConnection(_) => StatusCode::NOT_FOUND,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            refused(state, signed, status, &e, "/console/breakers")
        }
    }
}
