//! The deliveries list: one store at a time, newest first, a page at a time by keyset (each page
//! starts after the last one's final delivery, so a page costs the same over a million
//! deliveries as over a thousand), filtered by status, subscriber, event type, the breaker that
//! holds them and creation time;
//! dead deliveries grouped by subscriber and failure; and the forms that change what the filter
//! selects ([`crate::bulk`]).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use jadpo_core::Store;
use jadpo_core::model::delivery::{DeliveryQuery, DeliveryStatus};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};

use crate::ConsoleState;
use crate::access::Signed;
use crate::pages::{maybe, page};

/// The most deliveries a page shows.
pub(crate) const PAGE_MOST: u32 = 200;
/// How many a page shows unless asked.
const PAGE_DEFAULT: u32 = 50;
/// The most groups of dead deliveries shown.
const GROUPS: u32 = 20;

/// The list's query: the filters, the page size, and where the page before ended.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct Filter {
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) store: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) status: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) subscriber: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) event_type: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) held: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) from: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limit: Option<u32>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) before_at: Option<String>,
    #[serde(default, skip_serializing_if = "blank")]
    pub(crate) before_id: Option<String>,
}

#[expect(clippy::ref_option, reason = "serde's skip_serializing_if passes a reference")]
fn blank(value: &Option<String>) -> bool {
    value.as_deref().is_none_or(|v| v.trim().is_empty())
}

/// A filter's value, trimmed; `None` when blank.
pub(crate) fn given(value: Option<&String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// A time as a filter takes it: RFC 3339, or a browser's `YYYY-MM-DDTHH:MM[:SS]` read as UTC.
fn time(text: &str, what: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").map(|t| t.and_utc()))
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M").map(|t| t.and_utc()))
        .map_err(|_| format!("{what} {text:?} is not a time (2026-12-03T14:00, or RFC 3339)"))
}

impl Filter {
    /// The store it reads (the first open one unless given) and its page query; why not, for
    /// a filter that names no open store, no status, or no time.
    pub(crate) fn resolve(
        &self,
        state: &ConsoleState,
    ) -> Result<(String, std::sync::Arc<dyn Store>, DeliveryQuery), String> {
        let stores = &state.engine.stores;
        let name = given(self.store.as_ref())
            .or_else(|| stores.keys().next().cloned())
            .ok_or("no store is open here")?;
        let store = stores.get(&name).ok_or_else(|| format!("no store {name:?} is open here"))?;
        let status = match given(self.status.as_ref()) {
            None => None,
            Some(text) => Some(DeliveryStatus::parse(&text).ok_or_else(|| {
                format!("{text:?} is not one of pending, handled, dead, discarded")
            })?),
        };
        let when = |v: Option<&String>, what| given(v).map(|t| time(&t, what)).transpose();
        let before = match (given(self.before_at.as_ref()), given(self.before_id.as_ref())) {
            (Some(at), Some(id)) => Some((time(&at, "before_at")?, id)),
            (None, None) => None,
            _ => return Err("a page starts after both before_at and before_id".to_owned()),
        };
        let query = DeliveryQuery {
            status,
            subscriber: given(self.subscriber.as_ref()),
            event_type: given(self.event_type.as_ref()),
            held_by: given(self.held.as_ref()),
            created_from: when(self.from.as_ref(), "from")?,
            created_to: when(self.to.as_ref(), "to")?,
            before,
            limit: self.limit.unwrap_or(PAGE_DEFAULT).clamp(1, PAGE_MOST),
        };
        Ok((name, std::sync::Arc::clone(store), query))
    }

    /// This filter's list URL.
    pub(crate) fn href(&self) -> String {
        let query = serde_urlencoded::to_string(self).unwrap_or_default();
        format!("/console/deliveries?{query}")
    }

    /// The same filter from its first page.
    fn first_page(&self) -> Self {
        Self { before_at: None, before_id: None, ..self.clone() }
    }
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
        store.dead_groups(GROUPS, crate::pages::DEAD_WINDOW).await.unwrap_or_default()
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
            p.note { "Among the newest " (crate::pages::DEAD_WINDOW) " dead deliveries; a change below counts exactly what the filter selects." }
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

/// `400` with why, and a way back.
pub(crate) fn refused(state: &ConsoleState, signed: &Signed, why: &str) -> Response {
    let body = html! { p.error { (why) } p { a href="/console/deliveries" { "All deliveries" } } };
    (StatusCode::BAD_REQUEST, page(state, signed, "Deliveries", body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_as_browsers_and_rfc_3339_write_them() {
        let at = |t: &str| time(t, "from").map(|t| t.to_rfc3339());
        assert_eq!(at("2026-12-03T14:00").as_deref(), Ok("2026-12-03T14:00:00+00:00"));
        assert_eq!(at("2026-12-03T14:00:05").as_deref(), Ok("2026-12-03T14:00:05+00:00"));
        assert_eq!(at("2026-12-03T15:00:00+01:00").as_deref(), Ok("2026-12-03T14:00:00+00:00"));
        assert!(at("yesterday").is_err_and(|e| e.contains("not a time")));
    }

    #[test]
    fn a_filter_links_to_itself_without_blank_fields() {
        let f = Filter {
            store: Some("main".into()),
            status: Some(String::new()),
            subscriber: Some("send receipt&x".into()),
            ..Filter::default()
        };
        assert_eq!(f.href(), "/console/deliveries?store=main&subscriber=send+receipt%26x");
    }
}
