//! The console's page frame, shared by every page: the frame and its style, the login and
//! message pages, and how times are shown.
//!
//! Why `maud`: markup written as Rust, checked at compile time, every value escaped unless
//! marked otherwise — a delivery's failure text or an event's payload is the application's data
//! and must never become markup.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};

use crate::ConsoleState;
use crate::access::Signed;

/// How many of the newest dead deliveries the groups are made of (a bounded read).
pub(crate) const DEAD_WINDOW: u32 = 1_000;

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
pub(crate) fn frame(
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
