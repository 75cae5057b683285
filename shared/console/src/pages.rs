//! The console's page frame and its overview.
//!
//! Why `maud`: markup written as Rust, checked at compile time, every value escaped unless
//! marked otherwise — a delivery's failure text or an event's payload is the application's data
//! and must never become markup.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use jadpo_core::model::breaker::State as BreakerState;
use jadpo_core::model::delivery::DeliveryStatus;
use maud::{DOCTYPE, Markup, html};

use crate::ConsoleState;
use crate::access::Signed;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24}\
nav{background:#1b1f24;padding:.6em 1em}nav a{color:#fff;margin-right:1.2em;text-decoration:none}\
nav form{display:inline;float:right}main{padding:1em 1.5em}table{border-collapse:collapse;margin:.5em 0 1.5em}\
th,td{border-bottom:1px solid #d0d7de;padding:.3em .7em;text-align:left;vertical-align:top}\
th{background:#f6f8fa}.dead{color:#b42318}.note{color:#57606a}pre{background:#f6f8fa;padding:.7em;overflow:auto}\
.flash{background:#dafbe1;padding:.5em 1em}.error{background:#ffebe9;padding:.5em 1em}";

/// A whole page: the navigation, who is acting, `body`.
pub(crate) fn page(state: &ConsoleState, signed: &Signed, title: &str, body: Markup) -> Markup {
    frame(state, signed, (title, None), body)
}

/// [`page`], reloading itself every `refresh` seconds when given.
fn frame(
    state: &ConsoleState,
    signed: &Signed,
    (title, refresh): (&str, Option<u32>),
    body: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                @if let Some(seconds) = refresh { meta http-equiv="refresh" content=(seconds); }
                title { (title) " · Jadpo console" }
                style { (STYLE) }
            }
            body {
                nav {
                    a href="/console/" { "Overview" }
                    a href="/console/deliveries" { "Deliveries" }
                    a href="/console/runs" { "Runs" }
                    a href="/console/schedules" { "Schedules" }
                    a href="/console/breakers" { "Breakers" }
                    a href="/console/flags" { "Flags" }
                    a href="/console/audit" { "Audit trail" }
                    a href="/console/actions" { "Operator actions" }
                    @if state.access.asks_login() {
                        form method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(signed.csrf);
                            button type="submit" { "Sign out " (signed.operator.name()) }
                        }
                        form method="post" action="/console/login-links" {
                            input type="hidden" name="csrf" value=(signed.csrf);
                            button type="submit" { "Login link for another browser" }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The form a login link opens: who is signing in (suggested: the console's operator), with
/// why the last try was refused, if it was.
pub(crate) fn login(token: &str, suggested: &str, refused: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { "Sign in · Jadpo console" } style { (STYLE) } }
            body { main {
                h1 { "Sign in" }
                @if let Some(why) = refused { p.error { (why) } }
                p { "Every change you make in this session is recorded under the name you give." }
                form method="post" action="/console/login" {
                    input type="hidden" name="token" value=(token);
                    label { "Your name " input name="operator" value=(suggested) required maxlength="64"; }
                    " " button type="submit" { "Sign in" }
                }
                p.note { "This link works once: signing in spends it." }
            } }
        }
    }
}

/// The page showing a login link made for another browser, once.
pub(crate) fn minted_link(
    state: &ConsoleState,
    signed: &Signed,
    link: &str,
    minutes: u64,
) -> Markup {
    let body = html! {
        p { "Open this link in the other browser. It works once, within " (minutes) " minutes,              and is shown only here:" }
        pre id="login-link" { (link) }
    };
    page(state, signed, "Login link", body)
}

/// A page with only a heading and a sentence (refusals, sign-in).
pub(crate) fn message(title: &str, text: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (title) " · Jadpo console" } style { (STYLE) } }
            body { main { h1 { (title) } p { (text) } } }
        }
    }
}

/// `503`: the store did not answer `e`; nothing was read or changed.
pub(crate) fn unavailable(
    state: &ConsoleState,
    signed: &Signed,
    title: &str,
    e: &dyn std::fmt::Display,
) -> Response {
    let body = html! { p.error { "The store did not answer: " (e) } };
    (StatusCode::SERVICE_UNAVAILABLE, page(state, signed, title, body)).into_response()
}

/// A time as the console shows it.
pub(crate) fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// `when`, or a dash.
pub(crate) fn maybe(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(|| "—".to_owned(), when)
}

/// Where each count on the overview stops ("at least" beyond).
const COUNT_CAP: u32 = 10_000;
/// How many of the newest dead deliveries the groups are made of (a bounded read).
pub(crate) const DEAD_WINDOW: u32 = 1_000;
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
        let filter = crate::listing::Filter {
            store: Some(name.to_owned()),
            status: Some(status.to_owned()),
            subscriber: subscriber.map(str::to_owned),
            ..crate::listing::Filter::default()
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
