//! The console's overview: per store, counts by status, the oldest pending delivery, the
//! breakers and the biggest groups of dead deliveries (its frame is [`crate::layout`]).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use jadpo_core::model::breaker::State as BreakerState;
use jadpo_core::model::delivery::DeliveryStatus;
use maud::{Markup, html};

use crate::ConsoleState;
use crate::access::Signed;
use crate::layout::{DEAD_WINDOW, frame, maybe, when};

/// Where each count on the overview stops ("at least" beyond).
const COUNT_CAP: u32 = 10_000;
/// How many groups of dead deliveries the overview shows per store.
const OVERVIEW_GROUPS: u32 = 5;

/// A capped count as the overview shows it.
fn counted(n: u64, cap: u64) -> String {
    if n >= cap { format!("{cap}+") } else { n.to_string() }
}

/// How long ago `t` was, roughly.
fn age(now: DateTime<Utc>, t: DateTime<Utc>) -> String {
    let s = (now - t).num_seconds().max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// One store's section of the overview.
async fn store_section(
    state: &ConsoleState,
    name: &str,
    store: &dyn jadpo_core::Store,
) -> Result<Markup, jadpo_core::StoreError> {
    let now = state.engine.clock.now();
    let summary = store.deliveries_summary(now - chrono::Duration::hours(24), COUNT_CAP).await?;
    let groups = store.dead_groups(OVERVIEW_GROUPS, DEAD_WINDOW).await?;
    let breakers = store.breakers_list().await?;
    let holds_schedules = state.engine.app.schedule_store() == name;
    let schedules = if holds_schedules { store.schedules_list().await? } else { Vec::new() };
    let holds_runs = state.engine.app.workflow_stores().contains(&name);
    let runs = if holds_runs { store.runs_by_status(COUNT_CAP).await? } else { Vec::new() };
    let link = |status: &str, subscriber: Option<&str>| {
        let filter = crate::filter::Filter {
            store: Some(name.to_owned()),
            status: Some(status.to_owned()),
            subscriber: subscriber.map(str::to_owned),
            ..crate::filter::Filter::default()
        };
        filter.href()
    };
    Ok(html! {
        h2 { "Store " (name) }
        table {
            tr { @for (status, _) in &summary.counts { th { (status.as_str()) } } th { "dead in the last 24 h" } th { "oldest pending" } }
            tr {
                @for (status, n) in &summary.counts {
                    td class=(if *status == DeliveryStatus::Dead && *n > 0 { "dead" } else { "" }) {
                        a href=(link(status.as_str(), None)) { (counted(*n, summary.cap)) }
                    }
                }
                td { (counted(summary.dead_since, summary.cap)) }
                td { @if let Some(t) = summary.oldest_pending { (age(now, t)) " ago" } @else { "—" } }
            }
        }
        @if !groups.is_empty() {
            h3 { "Dead deliveries by subscriber and failure" }
            p.note { "Among the newest " (DEAD_WINDOW) " dead deliveries." }
            table { tr { th { "subscriber" } th { "failure" } th { "deliveries" } th { "latest death" } }
                @for g in &groups {
                    tr {
                        td { a href=(link("dead", Some(&g.subscriber))) { (g.subscriber) } }
                        td { (g.failure.as_deref().unwrap_or("—")) } td { (g.count) } td { (maybe(g.newest)) }
                    }
                }
            }
        }
        @if holds_runs {
            h3 { "Workflow runs" }
            table {
                tr { @for (status, _) in &runs { th { (status.as_str()) } } }
                tr { @for (status, n) in &runs {
                    td { a href={ "/console/runs?store=" (name) "&status=" (status.as_str()) } { (counted(*n, u64::from(COUNT_CAP))) } }
                } }
            }
        }
        h3 { "Circuit breakers" }
        @let open: Vec<_> = breakers.iter().filter(|b| b.state != BreakerState::Closed).collect();
        @if open.is_empty() { p.note { "All closed." } } @else {
            table { tr { th { "connection" } th { "state" } th { "failures" } th { "opened" } th { "reopens" } }
                @for b in open { tr { td { (b.connection) } td.dead { (b.state.as_str()) } td { (b.failures) } td { (maybe(b.opened_at)) } td { (maybe(b.reopen_at)) } } }
            }
        }
        @if !schedules.is_empty() {
            h3 { "Schedules" }
            table { tr { th { "schedule" } th { "state" } th { "next tick" } th { "last tick" } }
                @for s in &schedules { tr { td { (s.name) } td { (s.state()) } td { (when(s.next_due_at)) } td { (maybe(s.last_tick_at)) } } }
            }
        }
    })
}

/// `GET /console/`: per store, deliveries by status, the oldest pending one's age, deaths in
/// the last day, dead deliveries grouped, runs by status, open breakers, schedules; reloads itself every 15 s
/// (no script).
pub(crate) async fn overview(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
) -> Response {
    let mut sections = Vec::new();
    for (name, store) in &state.engine.stores {
        let section = store_section(&state, name, store.as_ref()).await.unwrap_or_else(|e| {
            html! { h2 { "Store " (name) } p.error { "This store did not answer: " (e) } }
        });
        sections.push(section);
    }
    let body = html! {
        p.note { "Reloads every 15 seconds. Counts stop at " (COUNT_CAP) "." }
        @for s in sections { (s) }
    };
    frame(&state, &signed, ("Overview", Some(15)), body).into_response()
}
