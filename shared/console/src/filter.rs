//! The deliveries filter the list, the overview's links and the bulk changes share: the query
//! string read and checked (store, status, subscriber, event type, holding breaker, creation
//! times, page), and the page a filter that does not read answers.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use jadpo_core::Store;
use jadpo_core::model::delivery::{DeliveryQuery, DeliveryStatus};
use maud::html;
use serde::{Deserialize, Serialize};

use crate::ConsoleState;
use crate::access::Signed;
use crate::layout::page;

/// The most deliveries a page shows.
pub(crate) const PAGE_MOST: u32 = 200;
/// How many a page shows unless asked.
const PAGE_DEFAULT: u32 = 50;

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
    pub(crate) fn first_page(&self) -> Self {
        Self { before_at: None, before_id: None, ..self.clone() }
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
