//! Deliveries in the console: the list (by store, status and subscriber, newest first), one
//! delivery with its event and last failure, and the changes an operator makes to it — retry
//! and discard — through [`DeliveryOps`], as `jadpo deliveries retry | discard` do.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use jadpo_core::model::delivery::{Delivery, DeliveryFilter, DeliveryStatus};
use jadpo_engine::deliveries::{DeliveryOpError, DeliveryOps};
use maud::{Markup, html};
use serde::Deserialize;

use crate::access::Signed;
use crate::pages::{maybe, page, when};
use crate::{ConsoleState, csrf_refusal};

/// The most deliveries one list shows per store.
const MOST: u32 = 200;

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/console/deliveries", get(list))
        .route("/console/deliveries/{id}", get(show))
        .route("/console/deliveries/{id}/retry", post(retry))
        .route("/console/deliveries/{id}/discard", post(discard))
}

/// A table of deliveries, each linking to its page.
pub(crate) fn table(deliveries: &[Delivery]) -> Markup {
    html! {
        table {
            tr { th { "delivery" } th { "subscriber" } th { "event" } th { "status" } th { "attempts" } th { "created" } th { "last failure" } }
            @for d in deliveries {
                tr {
                    td { a href={ "/console/deliveries/" (d.id) } { (d.id) } }
                    td { (d.subscriber) }
                    td { (d.event.event_type) }
                    td class=(if d.status == DeliveryStatus::Dead { "dead" } else { "" }) { (d.status.as_str()) }
                    td { (d.attempts) }
                    td { (when(d.created_at)) }
                    td { (d.last_failure.as_deref().unwrap_or("")) }
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct ListQuery {
    store: Option<String>,
    status: Option<String>,
    subscriber: Option<String>,
    limit: Option<u32>,
}

fn blank_none(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// `GET /console/deliveries`: newest first, filtered.
async fn list(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return bad_request(&state, &signed, &e.body_text()),
    };
    let status_text = blank_none(query.status);
    let status = match status_text.as_deref() {
        None => None,
        Some(text) => match DeliveryStatus::parse(text) {
            Some(s) => Some(s),
            None => {
                let why = format!("{text:?} is not one of pending, handled, dead, discarded");
                return bad_request(&state, &signed, &why);
            }
        },
    };
    let only = blank_none(query.store);
    if let Some(name) = only.as_deref().filter(|n| !state.engine.stores.contains_key(*n)) {
        return bad_request(&state, &signed, &format!("no store {name:?} is open here"));
    }
    let subscriber = blank_none(query.subscriber);
    let filter = DeliveryFilter {
        status,
        subscriber: subscriber.clone(),
        limit: query.limit.unwrap_or(50).clamp(1, MOST),
    };
    let mut sections = Vec::new();
    for (name, store) in &state.engine.stores {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let section = match store.deliveries_list(&filter).await {
            Ok(found) if found.is_empty() => {
                html! { h2 { (name) } p.note { "No deliveries match." } }
            }
            Ok(found) => html! {
                h2 { (name) }
                (table(&found))
                @if found.len() == usize::try_from(filter.limit).unwrap_or(usize::MAX) {
                    p.note { "The newest " (filter.limit) " shown; narrow the filter to see others." }
                }
            },
            Err(e) => html! { h2 { (name) } p.error { "This store did not answer: " (e) } },
        };
        sections.push(section);
    }
    let stores: Vec<&String> = state.engine.stores.keys().collect();
    let body = html! {
        form method="get" action="/console/deliveries" {
            label { "store " select name="store" {
                option value="" { "all" }
                @for s in &stores { option value=(s) selected[only.as_deref() == Some(s.as_str())] { (s) } }
            } }
            " "
            label { "status " select name="status" {
                option value="" { "any" }
                @for s in ["pending", "handled", "dead", "discarded"] {
                    option value=(s) selected[status_text.as_deref() == Some(s)] { (s) }
                }
            } }
            " "
            label { "subscriber " input name="subscriber" value=(subscriber.as_deref().unwrap_or("")); }
            " "
            button type="submit" { "Filter" }
        }
        @for s in sections { (s) }
    };
    page(&state, &signed, "Deliveries", body).into_response()
}

fn bad_request(state: &ConsoleState, signed: &Signed, why: &str) -> Response {
    let body = html! { p.error { (why) } p { a href="/console/deliveries" { "All deliveries" } } };
    (StatusCode::BAD_REQUEST, page(state, signed, "Deliveries", body)).into_response()
}

#[derive(Deserialize, Default)]
struct ShowQuery {
    done: Option<String>,
}

/// The delivery `id` and the store holding it.
async fn find(
    state: &ConsoleState,
    id: &str,
) -> Result<Option<(String, Delivery)>, jadpo_core::StoreError> {
    for (name, store) in &state.engine.stores {
        if let Some(d) = store.delivery_get(id).await? {
            return Ok(Some((name.clone(), d)));
        }
    }
    Ok(None)
}

/// `GET /console/deliveries/{id}`: the delivery, its event, its last failure, and what may be
/// done to it.
async fn show(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(id): Path<String>,
    query: Result<Query<ShowQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let done = query.ok().and_then(|Query(q)| q.done);
    let (store, d) = match find(&state, &id).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            let body = html! { p.error { "No delivery " (id) " in the stores open here." } };
            return (StatusCode::NOT_FOUND, page(&state, &signed, "Delivery", body))
                .into_response();
        }
        Err(e) => {
            let body = html! { p.error { "The stores did not answer: " (e) } };
            return (StatusCode::SERVICE_UNAVAILABLE, page(&state, &signed, "Delivery", body))
                .into_response();
        }
    };
    let payload = serde_json::to_string_pretty(&d.event.payload).unwrap_or_default();
    let open = matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Dead);
    let body = html! {
        @if let Some(done) = done { p.flash { "Done: " (done) "." } }
        table {
            tr { th { "store" } td { (store) } }
            tr { th { "subscriber" } td { (d.subscriber) } }
            tr { th { "status" } td class=(if d.status == DeliveryStatus::Dead { "dead" } else { "" }) { (d.status.as_str()) } }
            tr { th { "attempts" } td { (d.attempts) } }
            tr { th { "next attempt" } td { (when(d.next_attempt_at)) } }
            tr { th { "last attempt" } td { (maybe(d.last_attempt_at)) } }
            tr { th { "last failure" } td { (d.last_failure.as_deref().unwrap_or("—")) } }
            tr { th { "finished" } td { (maybe(d.finished_at)) } }
            tr { th { "created" } td { (when(d.created_at)) } }
            @if let Some(held) = &d.held { tr { th { "held by" } td { "the breaker of " (held.connection) " since " (when(held.since)) } } }
        }
        h2 { "Event " (d.event.id) }
        p { (d.event.event_type) ", emitted " (when(d.event.created_at)) }
        pre { (payload) }
        @if open {
            h2 { "Change it" }
            form method="post" action={ "/console/deliveries/" (d.id) "/retry" } {
                input type="hidden" name="csrf" value=(signed.csrf);
                button type="submit" { "Retry now" }
                " with a fresh round of attempts"
            }
            form method="post" action={ "/console/deliveries/" (d.id) "/discard" } {
                input type="hidden" name="csrf" value=(signed.csrf);
                label { "reason " input name="reason" required; }
                " "
                button type="submit" { "Discard" }
                " (final)"
            }
        }
    };
    page(&state, &signed, &format!("Delivery {}", d.id), body).into_response()
}

#[derive(Deserialize)]
struct ChangeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

/// `POST /console/deliveries/{id}/retry`.
async fn retry(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<ChangeForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&signed, &form.csrf) {
        return refused;
    }
    let ops = DeliveryOps::new(&state.engine, &state.operator);
    outcome(&state, &signed, &id, ops.retry(&id).await.map(|_| "retried"))
}

/// `POST /console/deliveries/{id}/discard` with a reason.
async fn discard(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<ChangeForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&signed, &form.csrf) {
        return refused;
    }
    let ops = DeliveryOps::new(&state.engine, &state.operator);
    outcome(&state, &signed, &id, ops.discard(&id, form.reason.trim()).await.map(|_| "discarded"))
}

/// Back to the delivery after a change; the refusal, with nothing changed, otherwise.
fn outcome(
    state: &ConsoleState,
    signed: &Signed,
    id: &str,
    result: Result<&str, DeliveryOpError>,
) -> Response {
    match result {
        Ok(done) => Redirect::to(&format!("/console/deliveries/{id}?done={done}")).into_response(),
        Err(e) => {
            let status = match e {
                DeliveryOpError::Unknown(_) => StatusCode::NOT_FOUND,
                DeliveryOpError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
                DeliveryOpError::NoReason => StatusCode::BAD_REQUEST,
                _ => StatusCode::CONFLICT,
            };
            let body = html! {
                p.error { "Refused, nothing changed: " (e) }
                p { a href={ "/console/deliveries/" (id) } { "Back to the delivery" } }
            };
            (status, page(state, signed, "Not done", body)).into_response()
        }
    }
}
