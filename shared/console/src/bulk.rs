//! Changing what a filter selects: retry or discard every delivery the deliveries list's filter
//! matches, at most [`MOST`] at a time, after a confirmation that says how many and which.
//!
//! Why the confirmation carries the ids: what the operator confirms is exactly what changes. A
//! delivery that matched when the count was shown but changed since (handled meanwhile) is
//! refused by the use case like any other, and the result says so; one that started to match
//! after is left alone.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jadpo_core::model::delivery::DeliveryQuery;
use jadpo_engine::operate::deliveries::{DeliveryOpError, DeliveryOps};
use maud::{Markup, html};
use serde::Deserialize;

use crate::access::Signed;
use crate::filter::{Filter, PAGE_MOST, refused};
use crate::layout::page;
use crate::{ConsoleState, csrf_refusal};

/// The most deliveries one change selects.
pub(crate) const MOST: usize = 1000;

/// The forms under a list: retry, or discard with a reason, what the filter selects.
pub(crate) fn forms(signed: &Signed, filter: &Filter, shown: usize) -> Markup {
    let hidden = hidden_filter(filter);
    html! {
        form method="post" action="/console/deliveries/bulk" {
            input type="hidden" name="csrf" value=(signed.csrf);
            input type="hidden" name="action" value="retry";
            (hidden)
            button type="submit" { "Retry every delivery this filter selects…" }
            span.note { " (" (shown) " on this page; you confirm the number next)" }
        }
        form method="post" action="/console/deliveries/bulk" {
            input type="hidden" name="csrf" value=(signed.csrf);
            input type="hidden" name="action" value="discard";
            (hidden_filter(filter))
            label { "reason " input name="reason" required; }
            " "
            button type="submit" { "Discard every delivery this filter selects…" }
        }
    }
}

fn hidden_filter(filter: &Filter) -> Markup {
    let fields = [
        ("store", &filter.store),
        ("status", &filter.status),
        ("subscriber", &filter.subscriber),
        ("event_type", &filter.event_type),
        ("from", &filter.from),
        ("to", &filter.to),
    ];
    html! {
        @for (name, value) in fields {
            @if let Some(v) = value { input type="hidden" name=(name) value=(v); }
        }
    }
}

/// A change to what a filter selects: first without `ids` (the confirmation), then with them.
#[derive(Debug, Deserialize)]
pub(crate) struct BulkForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    reason: String,
    /// The confirmed deliveries, comma-separated.
    #[serde(default)]
    ids: Option<String>,
    #[serde(flatten)]
    filter: Filter,
}

/// `POST /console/deliveries/bulk`.
pub(crate) async fn bulk(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    axum::Form(form): axum::Form<BulkForm>,
) -> Response {
    if let Some(refusal) = csrf_refusal(&signed, &form.csrf) {
        return refusal;
    }
    let verb = match form.action.as_str() {
        "retry" => "Retry",
        "discard" if form.reason.trim().is_empty() => {
            return refused(&state, &signed, "a discard needs a reason");
        }
        "discard" => "Discard",
        other => {
            return refused(&state, &signed, &format!("no change {other:?}: retry or discard"));
        }
    };
    match &form.ids {
        None => confirm(&state, &signed, &form, verb).await,
        Some(ids) => apply(&state, &signed, &form, ids).await,
    }
}

/// The ids the filter selects, newest first, at most [`MOST`]; whether there were more.
async fn selected(state: &ConsoleState, filter: &Filter) -> Result<(Vec<String>, bool), String> {
    let (name, store, query) = filter.resolve(state)?;
    let mut query = DeliveryQuery { before: None, limit: PAGE_MOST, ..query };
    let mut ids = Vec::new();
    loop {
        let found =
            store.deliveries_page(&query).await.map_err(|e| format!("store {name}: {e}"))?;
        let full = found.len() == PAGE_MOST as usize;
        query.before = found.last().map(|d| (d.created_at, d.id.clone()));
        ids.extend(found.into_iter().map(|d| d.id));
        if ids.len() > MOST {
            ids.truncate(MOST);
            return Ok((ids, true));
        }
        if !full {
            return Ok((ids, false));
        }
    }
}

async fn confirm(state: &ConsoleState, signed: &Signed, form: &BulkForm, verb: &str) -> Response {
    let (ids, more) = match selected(state, &form.filter).await {
        Ok(found) => found,
        Err(why) => return refused(state, signed, &why),
    };
    let back = form.filter.href();
    let body = html! {
        @if ids.is_empty() {
            p { "This filter selects no deliveries: nothing to do." }
        } @else {
            p { (verb) " " strong { (ids.len()) " deliveries" } " in store "
                (form.filter.store.as_deref().unwrap_or("")) "?"
                @if more { " The filter selects more than " (MOST) "; these are the newest " (MOST) ", and the rest stay as they are." } }
            @if !form.reason.is_empty() { p { "Reason: " (form.reason) } }
            form method="post" action="/console/deliveries/bulk" {
                input type="hidden" name="csrf" value=(signed.csrf);
                input type="hidden" name="action" value=(form.action);
                input type="hidden" name="reason" value=(form.reason);
                input type="hidden" name="ids" value=(ids.join(","));
                (hidden_filter(&form.filter))
                button type="submit" { (verb) " " (ids.len()) " deliveries" }
            }
        }
        p { a href=(back) { "Back to the list" } }
    };
    page(state, signed, &format!("{verb} deliveries?"), body).into_response()
}

async fn apply(state: &ConsoleState, signed: &Signed, form: &BulkForm, ids: &str) -> Response {
    let ids: Vec<&str> = ids.split(',').map(str::trim).filter(|i| !i.is_empty()).collect();
    if ids.len() > MOST {
        return refused(state, signed, &format!("at most {MOST} deliveries change at once"));
    }
    let ops = DeliveryOps::new(&state.engine, &signed.operator);
    let (mut done, mut refusals) = (0_usize, Vec::new());
    for id in &ids {
        let result = match form.action.as_str() {
            "discard" => ops.discard(id, form.reason.trim()).await,
            _ => ops.retry(id).await,
        };
        match result {
            Ok(_) => done += 1,
            Err(e @ DeliveryOpError::Store(_)) => {
                let body = html! { p.error { "Stopped after " (done) ": " (e) } };
                return (StatusCode::SERVICE_UNAVAILABLE, page(state, signed, "Not done", body))
                    .into_response();
            }
            Err(e) => refusals.push(e.to_string()),
        }
    }
    let verb = if form.action == "discard" { "discarded" } else { "retried" };
    let body = html! {
        p.flash { (done) " of " (ids.len()) " " (verb) ", each recorded as an operator action by " (signed.operator.name()) "." }
        @if !refusals.is_empty() {
            p.error { (refusals.len()) " refused, unchanged:" }
            ul { @for r in &refusals { li { (r) } } }
        }
        p { a href=(form.filter.href()) { "Back to the list" } }
    };
    page(state, signed, "Done", body).into_response()
}
