//! The deliveries list: one store at a time, newest first, a page at a time by keyset (each page
//! starts after the last one's final delivery, so a page costs the same over a million
//! deliveries as over a thousand), filtered by status, subscriber, event type, the breaker that
//! holds them and creation time;
//! dead deliveries grouped by subscriber and failure; and the forms that change what the filter
//! selects ([`crate::bulk`]).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jadpo_core::model::delivery::DeliveryStatus;
use maud::{Markup, html};

use crate::ConsoleState;
use crate::access::Signed;
use crate::filter::{Filter, refused};
use crate::layout::{DEAD_WINDOW, maybe, page};

/// The most groups of dead deliveries shown.
const GROUPS: u32 = 20;

/// The list's routes: the list, and the bulk changes of what its filter selects.
pub(crate) fn routes() -> axum::Router<ConsoleState> {
    axum::Router::new()
        .route("/console/deliveries", axum::routing::get(list))
        .route("/console/deliveries/bulk", axum::routing::post(crate::bulk::bulk))
}

/// `GET /console/deliveries`.
pub(crate) async fn list(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<Filter>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let filter = match query {
        Ok(Query(f)) => f,
        Err(e) => return refused(&state, &signed, &e.body_text()),
    };
    let (name, store, query) = match filter.resolve(&state) {
        Ok(resolved) => resolved,
        Err(why) => return refused(&state, &signed, &why),
    };
    let found = match store.deliveries_page(&query).await {
        Ok(found) => found,
        Err(e) => {
            let body = html! { p.error { "Store " (name) " did not answer: " (e) } };
            return (StatusCode::SERVICE_UNAVAILABLE, page(&state, &signed, "Deliveries", body))
                .into_response();
        }
    };
    let groups = if query.status == Some(DeliveryStatus::Dead) && query.before.is_none() {
        store.dead_groups(GROUPS, DEAD_WINDOW).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let older = found.last().filter(|_| found.len() == query.limit as usize).map(|last| Filter {
        store: Some(name.clone()),
        before_at: Some(last.created_at.to_rfc3339()),
        before_id: Some(last.id.clone()),
        ..filter.clone()
    });
    let shown = Filter { store: Some(name.clone()), ..filter.first_page() };
    let body = html! {
        (form(&state, &shown))
        @if !groups.is_empty() {
            h2 { "Dead, by subscriber and failure" }
            p.note { "Among the newest " (DEAD_WINDOW) " dead deliveries; a change below counts exactly what the filter selects." }
            table {
                tr { th { "subscriber" } th { "failure" } th { "deliveries" } th { "latest death" } }
                @for g in &groups {
                    @let only = Filter { subscriber: Some(g.subscriber.clone()), ..shown.clone() };
                    tr {
                        td { a href=(only.href()) { (g.subscriber) } }
                        td { (g.failure.as_deref().unwrap_or("—")) }
                        td { (g.count) }
                        td { (maybe(g.newest)) }
                    }
                }
            }
        }
        h2 { "Store " (name) }
        @if found.is_empty() { p.note { "No deliveries match." } } @else {
            (crate::deliveries::table(&found))
            (crate::bulk::forms(&signed, &shown, found.len()))
        }
        p {
            @if query.before.is_some() { a href=(shown.href()) { "← Newest" } " " }
            @if let Some(older) = older { a href=(older.href()) { "Older →" } }
        }
    };
    page(&state, &signed, "Deliveries", body).into_response()
}

/// The filter form.
fn form(state: &ConsoleState, shown: &Filter) -> Markup {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    html! {
        form method="get" action="/console/deliveries" {
            label { "store " select name="store" {
                @for s in state.engine.stores.keys() {
                    option value=(s) selected[shown.store.as_deref() == Some(s.as_str())] { (s) }
                }
            } }
            " "
            label { "status " select name="status" {
                option value="" { "any" }
                @for s in ["pending", "handled", "dead", "discarded"] {
                    option value=(s) selected[shown.status.as_deref() == Some(s)] { (s) }
                }
            } }
            " "
            label { "subscriber " input name="subscriber" value=(text(&shown.subscriber)); }
            " "
            label { "event type " input name="event_type" value=(text(&shown.event_type)); }
            " "
            label { "held by " input name="held" placeholder="connection" value=(text(&shown.held)); }
            " "
            label { "created from " input type="datetime-local" name="from" value=(text(&shown.from)); }
            " "
            label { "to " input type="datetime-local" name="to" value=(text(&shown.to)); }
            " "
            button type="submit" { "Filter" }
        }
    }
}
