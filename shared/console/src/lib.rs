//! `jadpo-console`: the operator console, server-rendered pages over the stores an operator's
//! configuration names, served by `jadpo console` (and by `jadpo-local` at `/console`).
//!
//! Why server-rendered HTML with no script: an operator at 3 a.m. needs pages that load at once
//! and read in any browser, and every read-only page here reads without script; forms post
//! changes and answer with a redirect. Why no code of its own for a change: each goes through
//! the engine's operator use cases (`DeliveryOps`, the operator cancel of a run, `ScheduleOps`,
//! `BreakerOps`, `FlagOps`), the ones the CLI's verbs call, so it is refused by the same rules and recorded in the operator-action log
//! with the console operator's name and the database role, like a verb's.
//!
//! Access ([`access`]): a login link with a token printed at start, spent by the login that
//! names its operator, a session cookie, a CSRF token in every form, and only the console's own
//! host names answered.

pub mod access;
mod bulk;
mod deliveries;
mod filter;
mod layout;
mod listing;
mod pages;
mod records;
mod runs;
mod schedules;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use jadpo_engine::Engine;
use jadpo_engine::operate::Operator;
use serde::Deserialize;

use access::{Access, Signed, session_cookie};
pub use access::{AccessError, listen_allowed};

/// What a console needs: the engine over its stores and its gate (which knows each session's
/// operator).
#[derive(Clone)]
pub struct ConsoleState {
    engine: Engine,
    access: Arc<Access>,
}

/// A console ready to serve: its routes (all under `/console`) and the login link's path
/// (`None` with `--no-login`).
pub struct Console {
    /// The routes.
    pub router: Router,
    /// `/console/login?token=…`: the link that starts a session; print it, never log it.
    pub login_path: Option<String>,
}

/// How a console is set up.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// Where it listens (its host names are answered).
    pub listen: SocketAddr,
    /// Serve without a login (refused unless `listen` is a loopback address).
    pub no_login: bool,
    /// More host names it answers to (`name` or `name:port`): a port-forward's, say.
    pub hosts: Vec<String>,
    /// Serve plain HTTP on a non-loopback address (behind a TLS-terminating proxy); refused
    /// otherwise.
    pub plain_http_on_network: bool,
}

/// The console over `engine`'s stores; each login names its operator (`operator` suggested,
/// and the only one with `no_login`).
pub fn console(
    engine: Engine,
    operator: Operator,
    settings: &ConsoleSettings,
) -> Result<Console, AccessError> {
    let how = (settings.no_login, settings.plain_http_on_network);
    let (access, token) = Access::new(settings.listen, how, operator, &settings.hosts)?;
    let state = ConsoleState { engine, access: Arc::new(access) };
    let router = Router::new()
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .route("/console/", get(pages::overview))
        .route("/console/login", get(login_form).post(login))
        .route("/console/login-links", post(mint_link))
        .route("/console/logout", post(logout))
        .merge(deliveries::routes())
        .merge(listing::routes())
        .merge(runs::routes())
        .merge(schedules::routes())
        .merge(records::routes())
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state);
    let login_path = token.map(|t| format!("/console/login?token={t}"));
    Ok(Console { router, login_path })
}

/// Refuses a request to another host (`421`) and one without a session (`401`, but the login
/// link itself); hands a signed-in request its session.
async fn guard(State(state): State<ConsoleState>, mut request: Request, next: Next) -> Response {
    if !state.access.host_ok(request.headers()) {
        let page = layout::message(
            "Not this console",
            "This console answers only to its own address: open it as jadpo console printed it.",
        );
        return (StatusCode::MISDIRECTED_REQUEST, page).into_response();
    }
    if request.uri().path() == "/console/login" {
        // The link's form and its post: before any session exists.
        return next.run(request).await;
    }
    let Some(signed) = state.access.signed(request.headers()) else {
        let page = layout::message(
            "Sign in",
            "Open the login link jadpo console printed when it started (it holds a token); \
             this browser has no session yet, or its session ended.",
        );
        return (StatusCode::UNAUTHORIZED, page).into_response();
    };
    request.extensions_mut().insert(signed);
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, header::HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"),
    );
    response
}

#[derive(Deserialize)]
struct LoginQuery {
    token: String,
}

/// The page a login link opens: who is signing in. Opening it spends nothing (a link preview
/// or scanner that fetches it leaves the link working); posting its form does.
async fn login_form(
    State(state): State<ConsoleState>,
    query: Result<Query<LoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if !state.access.asks_login() {
        return Redirect::to("/console/").into_response();
    }
    let token = query.map(|Query(q)| q.token).unwrap_or_default();
    if !state.access.link_live(&token) {
        return login_refused(&access::LoginRefusal::NoSuchLink);
    }
    let suggested = state.access.default_operator().name().to_owned();
    (StatusCode::OK, layout::login(&token, &suggested, None)).into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    operator: String,
}

/// Spends the link and starts a session acting as the name given.
async fn login(State(state): State<ConsoleState>, form: axum::Form<LoginForm>) -> Response {
    match state.access.login(&form.token, &form.operator) {
        Ok(id) => {
            tracing::info!(operator = %form.operator.trim(), "console session started");
            let cookie = session_cookie(&id);
            (
                StatusCode::SEE_OTHER,
                [(header::SET_COOKIE, cookie), (header::LOCATION, "/console/".into())],
            )
                .into_response()
        }
        Err(refusal @ access::LoginRefusal::BadName) => {
            let page = layout::login(&form.token, form.operator.trim(), Some(&refusal.to_string()));
            (StatusCode::UNPROCESSABLE_ENTITY, page).into_response()
        }
        Err(refusal) => login_refused(&refusal),
    }
}

fn login_refused(refusal: &access::LoginRefusal) -> Response {
    let text = format!(
        "{refusal}. Ask a signed-in operator for a new link (Overview, Login link for another \
         browser), or restart the console for a new printed one."
    );
    (StatusCode::UNAUTHORIZED, layout::message("Sign in", &text)).into_response()
}

/// A signed-in operator's link for another browser, shown once.
async fn mint_link(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    headers: HeaderMap,
    form: axum::Form<CsrfForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&signed, &form.csrf) {
        return refused;
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    match state.access.mint_link() {
        Ok(token) => {
            tracing::info!(operator = %signed.operator.name(), "console login link made");
            let link = format!("http://{host}/console/login?token={token}");
            let minutes = access::MINTED_LINK_TTL.as_secs() / 60;
            (StatusCode::OK, layout::minted_link(&state, &signed, &link, minutes)).into_response()
        }
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, layout::message("Login link", &e.to_string()))
            .into_response(),
    }
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn logout(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    headers: HeaderMap,
    form: axum::Form<CsrfForm>,
) -> Response {
    if let Some(refused) = csrf_refusal(&signed, &form.csrf) {
        return refused;
    }
    state.access.logout(&headers);
    let page = layout::message("Signed out", "This browser's session has ended.");
    (StatusCode::OK, page).into_response()
}

/// The refusal (`403`) of a form without the session's CSRF token; `None` when it has it.
fn csrf_refusal(signed: &Signed, csrf: &str) -> Option<Response> {
    if !csrf.is_empty() && csrf == signed.csrf {
        return None;
    }
    let page = layout::message(
        "Refused",
        "This form did not carry this session's token: it came from another page, or an old \
         one. Nothing was changed; reload the page and try again.",
    );
    Some((StatusCode::FORBIDDEN, page).into_response())
}
