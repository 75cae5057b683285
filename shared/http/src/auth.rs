//! The request's principal, resolved once at the edge ([`Caller`], [`MaybeCaller`]).
//!
//! A request carries at most one credential: `Authorization: Bearer` with a service key or an
//! API token, or else a browser session's cookie (`__Host-jadpo_session` deployed, `jadpo_session`
//! over the local process's plain HTTP). A browser session's write (any
//! method but `GET`, `HEAD`, `OPTIONS`) must also carry its CSRF token in `X-CSRF-Token` (`403`
//! without it): the cookie goes with any request the browser makes, the token only with the
//! page's own. Every refusal is logged with the route, the principal kind and the reason, never a
//! credential.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use chrono::{DateTime, Utc};
use jadpo_application::Callers;
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::{Scope, Scopes};
use jadpo_engine::authenticate::{
    AuthError, Authenticated, Credential, CredentialKind, authenticate as engine_authenticate,
};

use crate::{HttpState, Problem, store_problem};

/// The browser session's cookie over plain HTTP (the local process).
pub const SESSION_COOKIE: &str = "jadpo_session";
/// The cookie the page reads its CSRF token from (not `HttpOnly`: the page's script sends it),
/// over plain HTTP.
pub const CSRF_COOKIE: &str = "jadpo_csrf";
/// The session's cookie where cookies are `Secure` (deployed). The `__Host-` prefix makes the
/// browser refuse it unless it is `Secure`, `Path=/` and has no `Domain`: a sibling subdomain
/// cannot plant or overwrite it (cookie tossing), and a plain `jadpo_session` is not read.
pub const SECURE_SESSION_COOKIE: &str = "__Host-jadpo_session";
/// The CSRF token's cookie where cookies are `Secure`.
pub const SECURE_CSRF_COOKIE: &str = "__Host-jadpo_csrf";
/// The cookie holding an OpenID Connect sign-in's nonce secret (`HttpOnly`) over plain HTTP.
pub(crate) const NONCE_COOKIE: &str = "jadpo_oidc_nonce";
/// The same where cookies are `Secure`.
pub(crate) const SECURE_NONCE_COOKIE: &str = "__Host-jadpo_oidc_nonce";
/// The header a browser session's write carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The principal a request acts for: a handler that names `Caller` never runs for a request
/// without a live credential (`401`). A service key also says what it may do ([`Caller::may`]).
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who the request acts for.
    pub principal: Principal,
    /// What a service key may do; `None` for a user, whom the routes' own checks govern.
    scopes: Option<Scopes>,
    route: String,
    /// The user session (API token or browser session) that authenticated the request.
    pub session: Option<String>,
    /// When that session began (its sign-in, or the token's issue).
    pub session_started: Option<DateTime<Utc>>,
}

/// A request's principal where a route is open to requests without one: `None` only when the
/// request carried no credential at all (a bad one is still `401`).
#[derive(Debug, Clone)]
pub struct MaybeCaller(pub Option<Caller>);

impl Caller {
    /// Refuses (`403`) a service key without `scope` (`Runs` or `Sessions`).
    pub fn may(&self, scope: &Scope) -> Result<(), Problem> {
        self.allowed(self.scopes.as_ref().is_none_or(|s| s.allow(scope)), &scope.as_text())
    }

    /// Whether this is a service key allowed `scope`, asked without refusing (a route that
    /// only tells such a caller more).
    pub fn is_service_with(&self, scope: &Scope) -> bool {
        matches!(self.principal, Principal::Service(_))
            && self.scopes.as_ref().is_none_or(|s| s.allow(scope))
    }

    /// Refuses (`403`) a service key whose scopes do not include action `name`.
    pub fn may_run(&self, name: &str) -> Result<(), Problem> {
        self.allowed(
            self.scopes.as_ref().is_none_or(|s| s.allow_action(name)),
            &format!("action:{name}"),
        )
    }

    fn allowed(&self, allowed: bool, needed: &str) -> Result<(), Problem> {
        if allowed {
            return Ok(());
        }
        refused(&self.route, self.principal.kind(), "scope");
        let detail = match &self.scopes {
            Some(s) => {
                format!("this service key's scopes ({}) do not include {needed}", s.to_stored())
            }
            None => format!("{needed} is not open to signed-in users"),
        };
        Err(Problem::new(StatusCode::FORBIDDEN, "Forbidden", detail))
    }
}

/// Refuses a request whose principal (or lack of one) `callers` does not admit: `401` without a
/// credential, `403` with one. `what` names the action or workflow.
pub fn admitted(caller: Option<&Caller>, callers: &Callers, what: &str) -> Result<(), Problem> {
    if callers.admits(caller.map(|c| &c.principal)) {
        return Ok(());
    }
    let detail = format!("{what} is for {}", callers.describe());
    match caller {
        None => Err(unauthorized(&detail)),
        Some(c) => {
            refused(&c.route, c.principal.kind(), "not a declared caller");
            Err(Problem::new(StatusCode::FORBIDDEN, "Forbidden", detail))
        }
    }
}

pub(crate) fn refused(route: &str, kind: &str, reason: &str) {
    tracing::info!(route = %route, principal = kind, reason, "request refused");
}

pub(crate) fn unauthorized(detail: &str) -> Problem {
    Problem {
        header: Some((header::WWW_AUTHENTICATE, "Bearer")),
        ..Problem::new(StatusCode::UNAUTHORIZED, "Unauthorized", detail)
    }
}

impl FromRequestParts<HttpState> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &HttpState) -> Result<Self, Problem> {
        match MaybeCaller::from_request_parts(parts, state).await?.0 {
            Some(caller) => Ok(caller),
            None => {
                refused(parts.uri.path(), "none", "no credential");
                Err(unauthorized(
                    "send Authorization: Bearer <service key or API token>, or sign in",
                ))
            }
        }
    }
}

impl FromRequestParts<HttpState> for MaybeCaller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &HttpState) -> Result<Self, Problem> {
        let route = parts.uri.path().to_owned();
        match authenticate(state, &parts.method, &parts.headers).await {
            Ok(None) => Ok(Self(None)),
            Ok(Some(Authenticated { principal, scopes, session })) => {
                let (session, session_started) = session.unzip();
                Ok(Self(Some(Caller { principal, scopes, route, session, session_started })))
            }
            Err(refusal) => {
                let (kind, reason, problem) = *refusal;
                refused(&route, kind, reason);
                Err(problem)
            }
        }
    }
}

/// Who was refused (principal kind), why, and the answer; boxed, as it is the rare path.
type Refusal = Box<(&'static str, &'static str, Problem)>;

/// The request's credential, read from its headers, resolved by the engine's one use case.
async fn authenticate(
    state: &HttpState,
    method: &Method,
    headers: &HeaderMap,
) -> Result<Option<Authenticated>, Refusal> {
    let token;
    let credential = if let Some(value) = headers.get(header::AUTHORIZATION) {
        let presented =
            value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim).ok_or_else(
                || ("none", "malformed credential", unauthorized("Authorization must be Bearer")),
            )?;
        Credential::Bearer(presented)
    } else {
        let Some(cookie) = cookie(headers, state.web.cookie_names().0) else {
            return Ok(None);
        };
        token = cookie;
        Credential::Browser {
            token: &token,
            write: !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS),
            csrf: headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()),
        }
    };
    engine_authenticate(&state.engine, credential).await.map(Some).map_err(refusal)
}

/// How each refusal is answered and logged (never with the credential).
fn refusal(e: AuthError) -> Refusal {
    let (kind, reason, problem) = match &e {
        AuthError::NoUsers(_) => (
            "none",
            "user credential where the application declares no users",
            unauthorized(&e.to_string()),
        ),
        AuthError::Unknown(CredentialKind::ServiceKey) => (
            "none",
            "unknown, expired or revoked service key",
            unauthorized("the service key is unknown, expired or revoked"),
        ),
        AuthError::Unknown(CredentialKind::ApiToken) => (
            "none",
            "unknown, ended or expired API token",
            unauthorized("the API token is unknown, ended or expired"),
        ),
        AuthError::Unknown(CredentialKind::BrowserSession) => (
            "none",
            "unknown, ended or expired browser session",
            unauthorized("the session is over: sign in again"),
        ),
        AuthError::Csrf => (
            "user",
            "csrf",
            Problem::new(
                StatusCode::FORBIDDEN,
                "CSRF token missing or wrong",
                "a write through a browser session carries its CSRF token in X-CSRF-Token",
            ),
        ),
        AuthError::Store(e) => ("none", "store failure", store_problem(e)),
    };
    Box::new((kind, reason, problem))
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_owned())
}
