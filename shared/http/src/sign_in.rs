//! Sign-in by email and browser sessions over HTTP.
//!
//! * `POST /sign-in/email` `{"email"}`: mails a link and a code (`202` whether or not the
//!   address has an account, so the answer tells nobody who does); `429` past the hourly limit.
//! * `GET /sign-in/link?email=…&token=…`: the page a mailed link opens; its button posts the
//!   token (a link scanner that only fetches the page uses nothing).
//! * `POST /sign-in/link` `{"email", "token"}` and `POST /sign-in/code` `{"email", "code"}`: start a
//!   browser session: the session cookie (`HttpOnly`, `SameSite=Lax`; deployed `Secure` and
//!   named `__Host-jadpo_session`, locally `jadpo_session`) and the CSRF token, in the body and in
//!   the `__Host-jadpo_csrf` (`jadpo_csrf`) cookie the page reads.
//! * `POST /sign-in/oidc/{provider}/nonce`: a nonce to give the provider (`{"nonce",
//!   "expires_at"}`), its secret set in an `HttpOnly` cookie (`__Host-jadpo_oidc_nonce`
//!   deployed, `jadpo_oidc_nonce` locally) for ten minutes.
//! * `POST /sign-in/oidc/{provider}` `{"id_token"}`: signs in with an OpenID Connect ID token
//!   from a declared provider (its user, or the one its first sign-in links), once, only with the
//!   nonce cookie of the browser the token's nonce was issued to (the cookie is then cleared).
//! * Passkeys: `crate::passkeys`.
//! * `POST /sign-out`, `POST /sign-out/everywhere`: end this session, or every session of the
//!   user; `GET /me`: who the request acts for.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use jadpo_core::model::passkey::PasskeyRefusal;
use jadpo_core::model::principal::Principal;
use jadpo_core::model::sign_in::SignInError;
use jadpo_core::model::user_session::BrowserSession;
use jadpo_engine::oidc::{NONCE_TTL, nonce_for, sign_in_with_token};
use jadpo_engine::sign_in::{
    Proof, SignInFlowError, request_mail, sign_in, sign_out, sign_out_everywhere,
};
use serde::Deserialize;
use serde_json::json;

use crate::auth::refused;
use crate::{Caller, HttpState, Problem, store_problem};

/// The routes, to merge into the commit router.
pub(super) fn routes() -> Router<HttpState> {
    Router::new()
        .route("/sign-in/email", post(request))
        .route("/sign-in/link", get(link_page).post(with_link))
        .route("/sign-in/code", post(with_code))
        .route("/sign-in/oidc/{provider}", post(with_id_token))
        .route("/sign-in/oidc/{provider}/nonce", post(oidc_nonce))
        .route("/sign-out", post(out))
        .route("/sign-out/everywhere", post(out_everywhere))
        .route("/me", get(me))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailBody {
    email: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkBody {
    email: String,
    token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenBody {
    id_token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeBody {
    email: String,
    code: String,
}

/// A request body refused unless it says it is JSON. A sign-in a cross-site form could post
/// (`text/plain`, `application/x-www-form-urlencoded`: no preflight) would sign a victim's
/// browser into an attacker's account; such a body gets `415` before anything is read.
pub(crate) fn require_json(headers: &HeaderMap) -> Result<(), Problem> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let base = content_type.and_then(|v| v.split(';').next()).map(str::trim);
    if base.is_some_and(|b| b.eq_ignore_ascii_case("application/json")) {
        return Ok(());
    }
    let detail = format!(
        "send the body as Content-Type: application/json (this request's: {})",
        content_type.unwrap_or("none")
    );
    Err(Problem::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "JSON only", detail))
}

/// A JSON body of type `T`, refused unless its content type says JSON.
pub(crate) fn json_body<T: for<'de> Deserialize<'de>>(
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<T, Problem> {
    require_json(headers)?;
    serde_json::from_slice(bytes)
        .map_err(|e| Problem::new(StatusCode::BAD_REQUEST, "Malformed JSON", e.to_string()))
}

/// The problem a refused sign-in step at `route` answers, logged for no principal.
pub(crate) fn flow_problem(route: &str, e: &SignInFlowError) -> Problem {
    flow_problem_as(route, "none", e)
}

/// The problem a refused step at `route` answers, logged with the principal kind it acted for.
pub(crate) fn flow_problem_as(route: &str, kind: &str, e: &SignInFlowError) -> Problem {
    let detail = e.to_string();
    let (status, title, reason) = match e {
        SignInFlowError::NotOffered => {
            (StatusCode::NOT_FOUND, "Sign-in this way is not offered", "not offered")
        }
        SignInFlowError::Passkey(refusal) => passkey_refusal(refusal),
        SignInFlowError::Request(SignInError::BadAddress(_)) => {
            (StatusCode::BAD_REQUEST, "Not an email address", "bad address")
        }
        SignInFlowError::Request(
            SignInError::TooMany | SignInError::TooManyFromSource | SignInError::TooManyOverall,
        ) => {
            let problem = Problem {
                header: Some((header::RETRY_AFTER, "3600")),
                ..Problem::new(StatusCode::TOO_MANY_REQUESTS, "Too many sign-in attempts", detail)
            };
            refused(route, kind, "too many sign-in attempts");
            return problem;
        }
        SignInFlowError::NotLive => {
            (StatusCode::UNAUTHORIZED, "Sign-in refused", "link or code not live")
        }
        SignInFlowError::WrongCode { .. } => {
            (StatusCode::UNAUTHORIZED, "Sign-in refused", "wrong code")
        }
        SignInFlowError::NoAccount => (StatusCode::FORBIDDEN, "Sign-in refused", "no account"),
        SignInFlowError::Token(_) => (StatusCode::UNAUTHORIZED, "Sign-in refused", "token refused"),
        SignInFlowError::KeysUnavailable(_) => {
            tracing::warn!(error = %e, "an issuer's keys could not be read");
            (StatusCode::SERVICE_UNAVAILABLE, "Sign-in unavailable", "issuer keys unavailable")
        }
        SignInFlowError::Request(SignInError::Store(s)) | SignInFlowError::Store(s) => {
            return store_problem(s);
        }
        SignInFlowError::Outbox(jadpo_engine::commit::CommitError::Overloaded { .. }) => {
            refused(route, kind, "delivery backlog at its limit");
            return Problem {
                header: Some((header::RETRY_AFTER, "5")),
                ..Problem::new(StatusCode::SERVICE_UNAVAILABLE, "Busy", detail)
            };
        }
        SignInFlowError::Request(SignInError::Random(_))
        | SignInFlowError::Session(_)
        | SignInFlowError::Outbox(_) => {
            tracing::error!(error = %e, "sign-in failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", "internal")
        }
    };
    // The route and the reason, never the address, link or code.
    refused(route, kind, reason);
    Problem::new(status, title, detail)
}

/// How a refused passkey ceremony answers.
fn passkey_refusal(refusal: &PasskeyRefusal) -> (StatusCode, &'static str, &'static str) {
    match refusal {
        PasskeyRefusal::NoRelyingParty(_) => {
            tracing::warn!(error = %refusal, "passkeys are not configured");
            (StatusCode::SERVICE_UNAVAILABLE, "Passkeys are not configured", "no relying party")
        }
        PasskeyRefusal::Malformed(_) => {
            (StatusCode::BAD_REQUEST, "Not a WebAuthn response", "malformed response")
        }
        PasskeyRefusal::NoCeremony => {
            (StatusCode::UNAUTHORIZED, "Passkey refused", "no ceremony under way")
        }
        PasskeyRefusal::Refused(_) => {
            (StatusCode::UNAUTHORIZED, "Passkey refused", "response refused")
        }
        PasskeyRefusal::UnknownPasskey => {
            (StatusCode::UNAUTHORIZED, "Passkey refused", "unknown passkey")
        }
        PasskeyRefusal::AlreadyRegistered => {
            (StatusCode::CONFLICT, "Passkey registered already", "registered already")
        }
        PasskeyRefusal::Unreadable(_) => {
            tracing::error!(error = %refusal, "a stored passkey value cannot be read");
            (StatusCode::INTERNAL_SERVER_ERROR, "Passkey unreadable", "internal")
        }
    }
}

async fn request(
    State(state): State<HttpState>,
    crate::ClientSource(source): crate::ClientSource,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let result = async {
        let body: EmailBody = json_body(&headers, &bytes)?;
        let public_url = state.web.public_url.as_deref().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign-in links are not configured",
                "set JADPO_PUBLIC_URL to where people reach this server",
            )
        })?;
        request_mail(&state.engine, &body.email, public_url, source.as_deref())
            .await
            .map_err(|e| flow_problem("/sign-in/email", &e))?;
        Ok::<_, Problem>((
            StatusCode::ACCEPTED,
            axum::Json(json!({
                "status": "sent",
                "detail": "if this address may sign in, a link and a code are on their way",
            })),
        ))
    };
    result.await.into_response()
}

#[derive(Deserialize)]
struct LinkQuery {
    email: Option<String>,
    token: Option<String>,
}

/// The page a mailed link opens. Fetching it uses nothing: its button posts the token.
async fn link_page(Query(q): Query<LinkQuery>) -> Response {
    let quoted =
        |v: Option<String>| serde_json::to_string(&v.unwrap_or_default()).unwrap_or_default();
    // JSON-quoted values, with `<` escaped, are inert inside the script.
    let (email, token) =
        (quoted(q.email).replace('<', "\\u003c"), quoted(q.token).replace('<', "\\u003c"));
    Html(LINK_PAGE.replace("\"{{EMAIL}}\"", &email).replace("\"{{TOKEN}}\"", &token))
        .into_response()
}

const LINK_PAGE: &str = r#"<!doctype html>
<meta charset="utf-8"><title>Sign in</title>
<p>Sign in to this site?</p>
<button id="go">Sign in</button> <span id="out"></span>
<script>
const body = JSON.stringify({email: "{{EMAIL}}", token: "{{TOKEN}}"});
document.getElementById("go").onclick = async () => {
  const r = await fetch("/sign-in/link", {method: "POST", headers: {"Content-Type": "application/json"}, body});
  if (r.ok) { location.href = "/"; return; }
  document.getElementById("out").textContent = (await r.json()).detail;
};
</script>
"#;

async fn with_link(
    State(state): State<HttpState>,
    crate::ClientSource(source): crate::ClientSource,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let result = async {
        let body: LinkBody = json_body(&headers, &bytes)?;
        signed_in(
            &state,
            "/sign-in/link",
            sign_in(&state.engine, &body.email, Proof::Link(&body.token), source.as_deref()).await,
        )
    };
    result.await.into_response()
}

async fn with_code(
    State(state): State<HttpState>,
    crate::ClientSource(source): crate::ClientSource,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let result = async {
        let body: CodeBody = json_body(&headers, &bytes)?;
        signed_in(
            &state,
            "/sign-in/code",
            sign_in(&state.engine, &body.email, Proof::Code(&body.code), source.as_deref()).await,
        )
    };
    result.await.into_response()
}

/// A nonce for a sign-in with `provider`: the nonce in the body, its secret in the cookie.
async fn oidc_nonce(State(state): State<HttpState>, Path(provider): Path<String>) -> Response {
    let (secret, nonce) = match nonce_for(&state.engine, &provider) {
        Ok(made) => made,
        Err(e) => return flow_problem("/sign-in/oidc/nonce", &e).into_response(),
    };
    let expires_at = state.engine.clock.now() + NONCE_TTL;
    let cookie =
        set_cookie(&state, state.web.nonce_cookie(), &secret, NONCE_TTL.num_seconds(), true);
    let body = axum::Json(json!({"nonce": nonce, "expires_at": expires_at}));
    let response = (StatusCode::OK, [(header::CACHE_CONTROL, "no-store")], body).into_response();
    with_cookies(response, [cookie])
}

async fn with_id_token(
    State(state): State<HttpState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    let result = async {
        let body: TokenBody = json_body(&headers, &bytes)?;
        let secret = crate::auth::cookie(&headers, state.web.nonce_cookie());
        let started =
            sign_in_with_token(&state.engine, &provider, &body.id_token, secret.as_deref()).await;
        let answer = signed_in(&state, "/sign-in/oidc", started)?;
        // The nonce is spent: the cookie goes with the sign-in.
        let clear = set_cookie(&state, state.web.nonce_cookie(), "", 0, true);
        Ok::<_, Problem>(with_cookies(answer, [clear]))
    };
    result.await.into_response()
}

/// `Set-Cookie` for `name`: `Path=/`, `SameSite=Lax`, `Secure` when deployed (and never a
/// `Domain`, as the `__Host-` names need); `max_age` 0 clears it.
fn set_cookie(state: &HttpState, name: &str, value: &str, max_age: i64, http_only: bool) -> String {
    let mut cookie = format!("{name}={value}; Path=/; Max-Age={max_age}; SameSite=Lax");
    if http_only {
        cookie.push_str("; HttpOnly");
    }
    if state.web.secure_cookies {
        cookie.push_str("; Secure");
    }
    cookie
}

fn with_cookies<const N: usize>(mut response: Response, cookies: [String; N]) -> Response {
    for c in cookies {
        if let Ok(value) = HeaderValue::from_str(&c) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// The answer to a sign-in at `route`: the session's cookies and CSRF token, or why not.
pub(crate) fn signed_in(
    state: &HttpState,
    route: &str,
    started: Result<BrowserSession, SignInFlowError>,
) -> Result<Response, Problem> {
    let session = started.map_err(|e| flow_problem(route, &e))?;
    let max_age = (session.expires_at - state.engine.clock.now()).num_seconds().max(1);
    let body = json!({
        "user_id": session.user_id,
        "csrf_token": session.csrf,
        "expires_at": session.expires_at,
    });
    let (session_cookie, csrf_cookie) = state.web.cookie_names();
    let cookies = [
        set_cookie(state, session_cookie, &session.token, max_age, true),
        set_cookie(state, csrf_cookie, &session.csrf, max_age, false),
    ];
    Ok(with_cookies((StatusCode::OK, axum::Json(body)).into_response(), cookies))
}

fn cleared(state: &HttpState, response: Response) -> Response {
    let (session_cookie, csrf_cookie) = state.web.cookie_names();
    let cookies = [
        set_cookie(state, session_cookie, "", 0, true),
        set_cookie(state, csrf_cookie, "", 0, false),
    ];
    with_cookies(response, cookies)
}

/// The signed-in user `caller` is; a service is refused (`403`, `why` says what it cannot do).
pub(crate) fn user_of(caller: &Caller, route: &str, why: &str) -> Result<String, Problem> {
    match &caller.principal {
        Principal::User(id) => Ok(id.clone()),
        Principal::Service(_) => {
            refused(route, "service", "not a user");
            Err(Problem::new(StatusCode::FORBIDDEN, "Forbidden", why))
        }
    }
}

const SIGN_OUT_IS_FOR_USERS: &str =
    "only a signed-in user signs out; a service's key is revoked instead";

async fn out(State(state): State<HttpState>, caller: Caller) -> Response {
    let result = async {
        user_of(&caller, "/sign-out", SIGN_OUT_IS_FOR_USERS)?;
        if let Some(id) = &caller.session {
            sign_out(&state.engine, id).await.map_err(|e| store_problem(&e))?;
        }
        Ok::<_, Problem>(cleared(&state, StatusCode::NO_CONTENT.into_response()))
    };
    result.await.into_response()
}

#[derive(Deserialize)]
struct EverywhereQuery {
    /// `true`: the user's passkeys are removed too.
    #[serde(default)]
    passkeys: bool,
}

async fn out_everywhere(
    State(state): State<HttpState>,
    caller: Caller,
    query: Result<Query<EverywhereQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let result = async {
        let user = user_of(&caller, "/sign-out/everywhere", SIGN_OUT_IS_FOR_USERS)?;
        let Query(query) = query.map_err(|e| {
            Problem::new(StatusCode::BAD_REQUEST, "Bad query", format!("{e}: passkeys=true|false"))
        })?;
        let ended = sign_out_everywhere(&state.engine, &user, query.passkeys)
            .await
            .map_err(|e| store_problem(&e))?;
        let body = axum::Json(json!({"ended": ended.sessions, "passkeys_removed": ended.passkeys}));
        Ok::<_, Problem>(cleared(&state, (StatusCode::OK, body).into_response()))
    };
    result.await.into_response()
}

async fn me(caller: Caller) -> Response {
    let id = match &caller.principal {
        Principal::User(id) | Principal::Service(id) => id.clone(),
    };
    axum::Json(
        json!({"kind": caller.principal.kind(), "id": id, "owner": caller.principal.owner()}),
    )
    .into_response()
}
