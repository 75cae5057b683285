//! One delivery in the console: its event, its last failure, its step record (the calls it made
//! through connections), and the changes an operator makes
//! to it — retry and discard — through [`DeliveryOps`], as `jadpo deliveries retry | discard`
//! do; and the deliveries table the list and the overview share.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use jadpo_core::model::delivery::{Delivery, DeliveryStatus};
use jadpo_core::model::step::StepRecordView;
use jadpo_engine::operate::deliveries::{DeliveryOpError, DeliveryOps};
use maud::{Markup, html};
use serde::Deserialize;

use crate::access::Signed;
use crate::layout::{maybe, page, when};
use crate::{ConsoleState, csrf_refusal};

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
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
    let steps = step_record(&state, &d).await;
    let payload = serde_json::to_string_pretty(&d.event.payload).unwrap_or_default();
    let open = matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Dead);
    let body = html! {
        @if let Some(done) = done { p.flash { "Done: " (done) "." } }
        table {
            tr { th { "store" } td { (store) } }
            tr { th { "subscriber" } td { (d.subscriber) } }
            tr { th { "status" } td id="delivery-status" class=(if d.status == DeliveryStatus::Dead { "dead" } else { "" }) { (d.status.as_str()) } }
            tr { th { "attempts" } td { (d.attempts) } }
            tr { th { "next attempt" } td { (when(d.next_attempt_at)) } }
            tr { th { "last attempt" } td { (maybe(d.last_attempt_at)) } }
            tr { th { "last failure" } td { (d.last_failure.as_deref().unwrap_or("—")) } }
            tr { th { "finished" } td { (maybe(d.finished_at)) } }
            tr { th { "created" } td { (when(d.created_at)) } }
            @if let Some(held) = d.held_now() { tr { th { "held by" } td { "the breaker of " (held.connection) " since " (when(held.since)) } } }
        }
        h2 { "Event " (d.event.id) }
        p { (d.event.event_type) ", emitted " (when(d.event.created_at)) }
        pre { (payload) }
        @match &steps {
            Ok(Some(run)) => { (steps_table(run)) }
            Ok(None) => {}
            Err(e) => { p.error { "Its step record could not be read: " (e) } }
        }
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

/// The step record of delivery `d` (its calls through connections, each with its key and
/// whether it was answered), kept in its subscriber's store; `None` when it made no call.
async fn step_record(
    state: &ConsoleState,
    d: &Delivery,
) -> Result<Option<StepRecordView>, jadpo_core::StoreError> {
    let Some(spec) = state.engine.app.subscriber(&d.subscriber) else { return Ok(None) };
    if !state.engine.app.declares_calls(&spec.name) {
        return Ok(None);
    }
    let Some(store) = state.engine.stores.get(&spec.store) else { return Ok(None) };
    store.step_run_get(&d.id).await
}

fn steps_table(run: &StepRecordView) -> Markup {
    html! {
        h2 { "Step record" }
        p {
            "Started " (when(run.first_started_at)) "; "
            @if let Some(t) = run.finished_at { "finished " (when(t)) } @else { "not finished" }
            @if run.diverged { span.dead { "; diverged: " (run.divergence.as_deref().unwrap_or("")) } }
        }
        table {
            tr { th { "step" } th { "operation" } th { "idempotency key" } th { "first sent" } th { "answered" } }
            @for s in &run.steps {
                tr { td { (s.step_no) } td { (s.operation) } td { code { (s.idempotency_key) } } td { (when(s.first_sent_at)) } td { (maybe(s.answered_at)) } }
            }
        }
    }
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
    let ops = DeliveryOps::new(&state.engine, &signed.operator);
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
    let ops = DeliveryOps::new(&state.engine, &signed.operator);
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
