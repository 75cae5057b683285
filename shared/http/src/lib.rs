//! `jadpo-http`: the commit function's HTTP surface, shared by Lambda (`lambda_http`) and the local process.
//!
//! * `GET /healthz`: every store answers `SELECT 1` → `200`, else `503`.
//! * `POST /actions/{name}`: authenticated by `Authorization: Bearer <service key>`; the JSON
//!   body is the action's input; an `Idempotency-Key` header makes the request idempotent per
//!   caller. Answers the action's status and JSON body; a replay carries `Idempotency-Replayed:
//!   true`.
//!
//! * `/runs` and `/sessions`: workflow runs and Sessions ([`workflows`]).
//!
//! Every error is `application/problem+json` (RFC 9457) and changes nothing.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::{Scope, Scopes};
use jadpo_core::model::user_session::is_token;
use jadpo_core::{Store, id::new_id};
use jadpo_engine::Engine;
use jadpo_engine::commit::{CommitError, CommitRequest, commit, request_digest};
use jadpo_engine::relay::enqueue_now;
use serde_json::{Value, json};

mod workflows;

/// What the handlers share.
#[derive(Clone)]
pub struct HttpState {
    /// The engine (application, stores, queue, clock).
    pub engine: Engine,
    /// The store holding service keys (the default store).
    pub keys: Arc<dyn Store>,
}

/// The commit router.
pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/actions/{name}", post(run_action))
        .merge(workflows::routes())
        .fallback(|| async { problem(StatusCode::NOT_FOUND, "Not found", "no such route") })
        .with_state(state)
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

async fn healthz(State(state): State<HttpState>) -> Response {
    let mut checks = Vec::new();
    let mut failing = Vec::new();
    for (name, store) in &state.engine.stores {
        let result = store.ping().await;
        if let Err(e) = &result {
            failing.push(format!("{name}: {e}"));
        }
        checks
            .push(json!({"store": name, "dialect": store.dialect().name(), "ok": result.is_ok()}));
    }
    if failing.is_empty() {
        (StatusCode::OK, axum::Json(json!({"status": "ok", "stores": checks}))).into_response()
    } else {
        problem(StatusCode::SERVICE_UNAVAILABLE, "A store is unavailable", &failing.join("; "))
    }
}

/// The principal a request acts for, resolved once at the edge for every route that takes it: a
/// handler that names `Caller` never runs for a request without a live credential (`401`). A
/// service key also says what it may do ([`Caller::may`], [`Caller::may_run`]: `403` otherwise).
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who the request acts for.
    pub principal: Principal,
    /// What a service key may do; `None` for a user, whom the routes' own checks govern.
    scopes: Option<Scopes>,
    route: String,
}

impl Caller {
    /// Refuses (`403`) a service key without `scope` (`Runs` or `Sessions`).
    pub fn may(&self, scope: &Scope) -> Result<(), Problem> {
        self.allowed(self.scopes.as_ref().is_none_or(|s| s.allow(scope)), &scope.as_text())
    }

    /// Refuses (`403`) a service key that may not run action `name`, and every user: actions do
    /// not yet declare that signed-in users may call them, so none may.
    pub fn may_run(&self, name: &str) -> Result<(), Problem> {
        let allowed = match &self.principal {
            Principal::Service(_) => self.scopes.as_ref().is_none_or(|s| s.allow_action(name)),
            Principal::User(_) => false,
        };
        self.allowed(allowed, &format!("action:{name}"))
    }

    fn allowed(&self, allowed: bool, needed: &str) -> Result<(), Problem> {
        if allowed {
            return Ok(());
        }
        let kind = self.principal.kind();
        tracing::info!(route = %self.route, principal = kind, reason = "scope", needed, "request refused");
        let detail = match &self.scopes {
            Some(s) => {
                format!("this service key's scopes ({}) do not include {needed}", s.to_stored())
            }
            None => format!("{needed} is not open to signed-in users"),
        };
        Err(Problem::new(StatusCode::FORBIDDEN, "Forbidden", detail))
    }
}

impl FromRequestParts<HttpState> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &HttpState) -> Result<Self, Problem> {
        let route = parts.uri.path().to_owned();
        match authenticate(state, &parts.headers).await {
            Ok((principal, scopes)) => Ok(Self { principal, scopes, route }),
            Err((reason, problem)) => {
                // The route and the reason, never the credential.
                tracing::info!(route = %route, principal = "none", reason, "request refused");
                Err(problem)
            }
        }
    }
}

async fn authenticate(
    state: &HttpState,
    headers: &HeaderMap,
) -> Result<(Principal, Option<Scopes>), (&'static str, Problem)> {
    let unauthorized = |reason: &'static str, detail: &str| {
        let problem = Problem {
            header: Some((header::WWW_AUTHENTICATE, "Bearer")),
            ..Problem::new(StatusCode::UNAUTHORIZED, "Unauthorized", detail)
        };
        (reason, problem)
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            unauthorized("no credential", "send Authorization: Bearer <service key or API token>")
        })?;
    let presented = presented.trim();
    let now = state.engine.clock.now();
    if is_token(presented) {
        return match state.keys.user_session_verify(presented, now).await {
            Ok(Some(user)) => Ok((Principal::User(user), None)),
            Ok(None) => Err(unauthorized(
                "unknown, ended or expired API token",
                "the API token is unknown, ended or expired",
            )),
            Err(e) => Err(("store failure", store_problem(&e))),
        };
    }
    match state.keys.service_key_verify(presented, now).await {
        Ok(Some(key)) => Ok((Principal::Service(key.service), Some(key.scopes))),
        Ok(None) => Err(unauthorized(
            "unknown, expired or revoked service key",
            "the service key is unknown, expired or revoked",
        )),
        Err(e) => Err(("store failure", store_problem(&e))),
    }
}

/// The caller string an action sees and idempotency keys are scoped by: a service's name (as
/// before principals), a user's owner string.
fn caller_name(principal: &Principal) -> String {
    match principal {
        Principal::Service(name) => name.clone(),
        Principal::User(_) => principal.owner(),
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

async fn run_action(
    State(state): State<HttpState>,
    caller: Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(problem) = caller.may_run(&name) {
        return problem.into_response();
    }
    let caller = caller_name(&caller.principal);
    if state.engine.app.action(&name).is_none() {
        return problem(
            StatusCode::NOT_FOUND,
            "Unknown action",
            &format!("no action named {name:?}"),
        );
    }
    let key = match idempotency_key(&headers) {
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
    let request = CommitRequest {
        action: name.clone(),
        request_digest: request_digest("POST", &format!("/actions/{name}"), &body),
        input,
        caller,
        idempotency_key: key,
        traceparent: header_text(&headers, "traceparent"),
        tracestate: header_text(&headers, "tracestate"),
        request_id: new_id(state.engine.clock.as_ref()).to_string(),
    };
    match commit(&state.engine, request).await {
        Ok(outcome) => {
            enqueue_now(&state.engine, &outcome.store, &outcome.deliveries).await;
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
        CommitError::UndeclaredEvent { .. }
        | CommitError::ChainTooDeep { .. }
        | CommitError::Failed(_) => {
            tracing::error!(error = %e, "action failed");
            problem(StatusCode::INTERNAL_SERVER_ERROR, "Action failed", &e.to_string())
        }
    }
}
