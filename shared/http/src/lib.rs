//! `jadpo-http`: the commit function's HTTP surface, shared by Lambda (`lambda_http`) and the local process.
//!
//! * `GET /healthz`: liveness — `200` from the process, touching no store.
//! * `GET /readyz`: readiness — every store answers `SELECT 1` → `200`, else `503`; stores are
//!   asked at most once per [`READY_EVERY`] per process, and only a service key allowed
//!   `operations` is told which store failed and why.
//! * `POST /actions/{name}`: for the callers the action declares (a service key, a signed-in
//!   user's API token or browser session, or anyone); the JSON body is the action's input; an
//!   `Idempotency-Key` header makes the request idempotent per caller. Answers the action's
//!   status and JSON body; a replay carries `Idempotency-Replayed: true`.
//! * `/runs` and `/sessions`: workflow runs and Sessions ([`workflows`]).
//! * `/files`: uploads into declared file fields and downloads for a record's reader ([`files`]).
//! * `/sign-in/…`, `/sign-out`, `/me`: sign-in by email, browser sessions ([`sign_in`]).
//! * `POST /webhooks/{source}`: a declared webhook source's events, proven by their signature
//!   ([`webhooks`]).
//!
//! Every error is `application/problem+json` (RFC 9457) and changes nothing.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::Scope;
use jadpo_core::{Store, id::new_id};
use jadpo_engine::Engine;
use jadpo_engine::commit::{CommitError, CommitRequest, commit, request_digest};
use jadpo_engine::services::webhooks::limit::Buckets;
use jadpo_engine::services::webhooks::verify::Secret;
use serde_json::{Value, json};

mod auth;
mod files;
mod passkeys;
mod sign_in;
mod trace;
mod webhooks;
mod workflows;

pub use auth::{
    CSRF_COOKIE, CSRF_HEADER, Caller, MaybeCaller, SECURE_CSRF_COOKIE, SECURE_SESSION_COOKIE,
    SESSION_COOKIE, admitted, cookie,
};

/// What the handlers share.
#[derive(Clone)]
pub struct HttpState {
    /// The engine (application, stores, queue, clock).
    pub engine: Engine,
    /// The last readiness check: when, and each store's answer.
    ready: Arc<tokio::sync::Mutex<Readiness>>,
    /// The store holding service keys (the services' store).
    pub keys: Arc<dyn Store>,
    /// The store holding users' sessions and sign-in requests (the user entity's).
    pub users: Arc<dyn Store>,
    /// How sign-in links and cookies are made.
    pub web: WebSettings,
    /// Each webhook source's secrets (from its variable: `jadpo_runtime`'s configuration).
    pub webhook_secrets: Arc<BTreeMap<String, Vec<Secret>>>,
    /// Each webhook source's rate in this process.
    webhook_buckets: Arc<Buckets>,
}

impl HttpState {
    /// The state for `engine`: keys in the default store, sessions in the users' store.
    pub fn new(engine: Engine, web: WebSettings) -> Result<Self, jadpo_core::StoreError> {
        let keys = Arc::clone(engine.store(engine.app.services_store())?);
        let users = Arc::clone(engine.store(engine.app.users_store())?);
        let webhook_secrets = Arc::default();
        let webhook_buckets = Arc::default();
        Ok(Self {
            engine,
            keys,
            users,
            web,
            ready: Arc::default(),
            webhook_secrets,
            webhook_buckets,
        })
    }

    /// The state with each webhook source's secrets.
    #[must_use]
    pub fn with_webhook_secrets(mut self, secrets: BTreeMap<String, Vec<Secret>>) -> Self {
        self.webhook_secrets = Arc::new(secrets);
        self
    }
}

/// How sign-in links and cookies are made.
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// Where people reach this server (`https://shop.example.com`): mailed links point there.
    /// `None`: sign-in by email answers `503` until it is set (`JADPO_PUBLIC_URL`).
    pub public_url: Option<String>,
    /// Whether cookies are `Secure` (deployed: always; locally over plain HTTP: not).
    pub secure_cookies: bool,
}

impl WebSettings {
    /// The session's and the CSRF token's cookie names: `__Host-` prefixed where cookies are
    /// `Secure`, plain over plain HTTP (where a browser would refuse the prefix).
    pub fn cookie_names(&self) -> (&'static str, &'static str) {
        if self.secure_cookies {
            (SECURE_SESSION_COOKIE, SECURE_CSRF_COOKIE)
        } else {
            (SESSION_COOKIE, CSRF_COOKIE)
        }
    }

    /// The OpenID Connect nonce's cookie name, prefixed as [`WebSettings::cookie_names`].
    pub fn nonce_cookie(&self) -> &'static str {
        if self.secure_cookies { auth::SECURE_NONCE_COOKIE } else { auth::NONCE_COOKIE }
    }
}

/// The commit router.
pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/actions/{name}", post(run_action))
        .merge(workflows::routes())
        .merge(files::routes())
        .merge(sign_in::routes())
        .merge(passkeys::routes())
        .merge(webhooks::routes())
        .fallback(|| async { problem(StatusCode::NOT_FOUND, "Not found", "no such route") })
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::middleware::map_response(as_problem))
        .with_state(state)
}

/// Any error answer that is not a problem yet — a rejection by the framework itself, such as a
/// body over the size limit (`413`) — becomes one, its text the detail: every error this API
/// gives is `application/problem+json`. A router merging more routes into [`router`]'s adds it
/// again for them.
pub async fn as_problem(response: Response) -> Response {
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    if status.as_u16() < 400 || is_problem {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let reason = status.canonical_reason().unwrap_or("Error");
    let detail = String::from_utf8_lossy(&text);
    let detail =
        if detail.trim().is_empty() { reason.to_lowercase() } else { detail.trim().to_owned() };
    let mut answer = problem(status, reason, &detail);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}

/// The answer to a method a route does not take: `405` as a problem (axum adds `Allow`). A
/// router merging more routes into [`router`]'s sets it again for them.
pub async fn wrong_method() -> Response {
    problem(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed", "this route takes another method")
}

/// An `application/problem+json` response.
pub fn problem(status: StatusCode, title: &str, detail: &str) -> Response {
    let body =
        json!({"type": "about:blank", "title": title, "status": status.as_u16(), "detail": detail});
    (status, [(header::CONTENT_TYPE, "application/problem+json")], body.to_string()).into_response()
}

/// A problem not yet rendered: small enough to pass around as an error.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    title: &'static str,
    detail: String,
    header: Option<(header::HeaderName, &'static str)>,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, title: &'static str, detail: impl Into<String>) -> Self {
        Self { status, title, detail: detail.into(), header: None }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut response = problem(self.status, self.title, &self.detail);
        if let Some((name, value)) = self.header {
            response.headers_mut().insert(name, HeaderValue::from_static(value));
        }
        response
    }
}

async fn healthz() -> Response {
    (StatusCode::OK, axum::Json(json!({"status": "ok"}))).into_response()
}

/// How long a readiness answer is reused: an edge asked a thousand times a second still asks
/// each store once per this window.
pub const READY_EVERY: chrono::TimeDelta = chrono::TimeDelta::seconds(5);

/// The last readiness check, if any: when it was made, and each store's answer.
type Readiness = Option<(DateTime<Utc>, Vec<StoreCheck>)>;

/// One store's readiness: its name, dialect, and the error if it did not answer.
#[derive(Debug, Clone)]
struct StoreCheck {
    store: String,
    dialect: &'static str,
    error: Option<String>,
}

async fn readyz(State(state): State<HttpState>, caller: MaybeCaller) -> Response {
    let checks = store_checks(&state).await;
    let operator = caller.0.is_some_and(|c| c.is_service_with(&Scope::Operations));
    let failing: Vec<String> = checks
        .iter()
        .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.store)))
        .collect();
    match (failing.is_empty(), operator) {
        (true, false) => (StatusCode::OK, axum::Json(json!({"status": "ready"}))).into_response(),
        (true, true) => {
            let stores: Vec<Value> = checks
                .iter()
                .map(|c| json!({"store": c.store, "dialect": c.dialect, "ok": true}))
                .collect();
            (StatusCode::OK, axum::Json(json!({"status": "ready", "stores": stores})))
                .into_response()
        }
        (false, false) => {
            problem(StatusCode::SERVICE_UNAVAILABLE, "Not ready", "a store does not answer")
        }
        (false, true) => {
            problem(StatusCode::SERVICE_UNAVAILABLE, "A store is unavailable", &failing.join("; "))
        }
    }
}

/// Each store's answer, asked again only when the last is older than [`READY_EVERY`].
async fn store_checks(state: &HttpState) -> Vec<StoreCheck> {
    let now = state.engine.clock.now();
    let mut last = state.ready.lock().await;
    if let Some((_, checks)) = last.as_ref().filter(|(at, _)| now - *at < READY_EVERY) {
        return checks.clone();
    }
    let mut checks = Vec::new();
    for (name, store) in &state.engine.stores {
        let error = store.ping().await.err().map(|e| e.to_string());
        if let Some(error) = &error {
            tracing::warn!(store = %name, %error, "readiness: a store does not answer");
        }
        checks.push(StoreCheck { store: name.clone(), dialect: store.dialect().name(), error });
    }
    *last = Some((now, checks.clone()));
    checks
}

/// The caller string an action sees and idempotency keys are scoped by: a service's name (as
/// before principals), a user's owner string, `anonymous` for no credential.
fn caller_name(principal: Option<&Principal>) -> String {
    match principal {
        Some(Principal::Service(name)) => name.clone(),
        Some(user) => user.owner(),
        None => "anonymous".to_owned(),
    }
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    let Some(raw) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match raw.to_str() {
        Ok(key) if (1..=255).contains(&key.len()) && key.chars().all(|c| c.is_ascii_graphic()) => {
            Ok(Some(key.to_owned()))
        }
        _ => Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "Bad Idempotency-Key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        )),
    }
}

/// When the invocation serving a request must have returned (a deployed function puts its
/// Lambda context's deadline here as a request extension): an action's changing calls are not
/// started when they could not finish before it, and its run's step records are held until then
/// at most.
#[derive(Debug, Clone, Copy)]
pub struct InvocationDeadline(pub DateTime<Utc>);

/// The client's network address as the edge saw it (API Gateway's source IP, deployed), put on
/// the request as an extension; sign-in counts mails and wrong codes per address. Without it
/// the connection's peer address is used (the local server), else one shared count.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::IpAddr);

/// The client address of a request, as text: [`ClientAddr`], else the peer of the connection;
/// `None` when the edge gave neither. Read from the request's extensions without copying them.
pub(crate) struct ClientSource(pub(crate) Option<String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientSource {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        let extensions = &parts.extensions;
        if let Some(ClientAddr(ip)) = extensions.get::<ClientAddr>() {
            return Ok(Self(Some(ip.to_string())));
        }
        let peer = extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>();
        Ok(Self(peer.map(|axum::extract::ConnectInfo(addr)| addr.ip().to_string())))
    }
}

async fn run_action(
    State(state): State<HttpState>,
    MaybeCaller(caller): MaybeCaller,
    deadline: Option<Extension<InvocationDeadline>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(spec) = state.engine.app.action(&name) else {
        if caller.is_none() {
            // No one learns which actions exist: the credential is asked for first.
            auth::refused(&format!("/actions/{name}"), "none", "no credential");
            return auth::unauthorized(
                "send Authorization: Bearer <service key or API token>, or sign in",
            )
            .into_response();
        }
        return problem(
            StatusCode::NOT_FOUND,
            "Unknown action",
            &format!("no action named {name:?}"),
        );
    };
    let allowed = admitted(caller.as_ref(), &spec.callers, &format!("action {name:?}"))
        .and_then(|()| caller.as_ref().map_or(Ok(()), |c| c.may_run(&name)));
    if let Err(problem) = allowed {
        return problem.into_response();
    }
    let principal = caller.map(|c| c.principal);
    let key = match idempotency_key(&headers) {
        Ok(Some(_)) if principal.is_none() => {
            // Keys are scoped by caller; every anonymous request would share one scope.
            return problem(
                StatusCode::BAD_REQUEST,
                "Bad Idempotency-Key",
                "an Idempotency-Key needs a credential: anonymous requests cannot be replayed",
            );
        }
        Ok(key) => key,
        Err(problem) => return problem.into_response(),
    };
    let input: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "Malformed JSON",
                "the body must be a JSON object",
            );
        }
        Err(e) => return problem(StatusCode::BAD_REQUEST, "Malformed JSON", &e.to_string()),
    };
    let (traceparent, tracestate) =
        trace::checked(header_text(&headers, "traceparent"), header_text(&headers, "tracestate"));
    let request = CommitRequest {
        action: name.clone(),
        request_digest: request_digest("POST", &format!("/actions/{name}"), &input),
        input,
        caller: caller_name(principal.as_ref()),
        principal,
        idempotency_key: key,
        traceparent,
        tracestate,
        request_id: new_id(state.engine.clock.as_ref()).to_string(),
    };
    let engine = match deadline {
        Some(Extension(InvocationDeadline(deadline))) => {
            Cow::Owned(state.engine.until(Some(deadline)))
        }
        None => Cow::Borrowed(&state.engine),
    };
    match commit(&engine, request).await {
        Ok(outcome) => {
            let status = StatusCode::from_u16(outcome.status).unwrap_or(StatusCode::OK);
            let mut response = (status, axum::Json(outcome.body)).into_response();
            if outcome.replayed {
                response
                    .headers_mut()
                    .insert("idempotency-replayed", HeaderValue::from_static("true"));
            }
            response
        }
        Err(e) => commit_problem(&e),
    }
}

pub(crate) fn store_problem(e: &jadpo_core::StoreError) -> Problem {
    use jadpo_core::StoreErrorKind as K;
    match e.kind() {
        K::Unavailable => Problem {
            header: Some((header::RETRY_AFTER, "1")),
            ..Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "the database is busy or unreachable",
            )
        },
        K::Conflict => Problem::new(
            StatusCode::CONFLICT,
            "Conflict",
            "a concurrent request changed the same data; retry",
        ),
        _ => {
            tracing::error!(error = %e, "store failure");
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal error",
                "the request failed; nothing was written",
            )
        }
    }
}

fn commit_problem(e: &CommitError) -> Response {
    match e {
        CommitError::UnknownAction(_) => {
            problem(StatusCode::NOT_FOUND, "Unknown action", &e.to_string())
        }
        CommitError::KeyReused(_) => {
            problem(StatusCode::UNPROCESSABLE_ENTITY, "Idempotency-Key reused", &e.to_string())
        }
        CommitError::Rejected { status, title, detail } => {
            let status = StatusCode::from_u16(*status).ok().filter(StatusCode::is_client_error);
            problem(status.unwrap_or(StatusCode::UNPROCESSABLE_ENTITY), title, detail)
        }
        CommitError::Store(store) => store_problem(store).into_response(),
        CommitError::Overloaded { .. } => Problem {
            header: Some((header::RETRY_AFTER, "5")),
            ..Problem::new(StatusCode::SERVICE_UNAVAILABLE, "Busy", e.to_string())
        }
        .into_response(),
        CommitError::Later(why) => Problem {
            header: Some((header::RETRY_AFTER, "1")),
            ..Problem::new(StatusCode::SERVICE_UNAVAILABLE, "Try again", why)
        }
        .into_response(),
        CommitError::UndeclaredEvent { .. }
        | CommitError::ChainTooDeep { .. }
        | CommitError::Failed(_) => {
            tracing::error!(error = %e, "action failed");
            problem(StatusCode::INTERNAL_SERVER_ERROR, "Action failed", &e.to_string())
        }
    }
}
