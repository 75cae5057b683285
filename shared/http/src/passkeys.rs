//! Passkeys over HTTP: each ceremony in two requests, the options the browser hands to
//! `navigator.credentials`, then the credential it gives back (`PublicKeyCredential.toJSON()`).
//!
//! * `POST /passkeys/options`, then `POST /passkeys` with the new credential: a signed-in user
//!   (a browser session, with its CSRF token, or an API token) registers a passkey (`201`,
//!   its credential id; `409` if it is registered already).
//! * `GET /passkeys`: the signed-in user's passkeys (credential id, when registered and last
//!   used; never a key); `DELETE /passkeys/{credential_id}`: removes one of them (`204`; `404`
//!   for one that is not theirs, exactly as for one that does not exist).
//! * `POST /sign-in/passkey/options`, then `POST /sign-in/passkey` with the assertion: anyone
//!   signs in with a registered passkey and gets a browser session, as every sign-in does.
//!
//! The relying party is the public URL's host (`JADPO_PUBLIC_URL`): browsers offer passkeys only
//! over `https://` or on `localhost`, never on an IP address.

use axum::Router;
use axum::extract::Path;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use jadpo_engine::passkeys::{self, RelyingParty};
use jadpo_engine::sign_in::SignInFlowError;
use serde_json::json;

use crate::sign_in::{flow_problem, flow_problem_as, require_json, signed_in, user_of};
use crate::{Caller, HttpState, Problem};

const FOR_USERS: &str = "only a signed-in user registers a passkey";

/// How recent a sign-in must be to register a passkey: a session left open on a shared or
/// stolen device cannot add a way back in.
pub(crate) const RECENT_SIGN_IN: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// Refuses (`401`) a registration from a session that began longer than [`RECENT_SIGN_IN`] ago.
fn recently_signed_in(state: &HttpState, caller: &Caller, route: &str) -> Result<(), Problem> {
    let now = state.engine.clock.now();
    if caller.session_started.is_some_and(|at| now - at <= RECENT_SIGN_IN) {
        return Ok(());
    }
    crate::auth::refused(route, "user", "sign-in not recent");
    Err(Problem::new(
        StatusCode::UNAUTHORIZED,
        "Recent sign-in needed",
        format!(
            "adding a passkey needs a sign-in in the last {} minutes: sign in again, then add it",
            RECENT_SIGN_IN.num_minutes()
        ),
    ))
}

/// The routes, to merge into the commit router.
pub(super) fn routes() -> Router<HttpState> {
    Router::new()
        .route("/passkeys/options", post(register_options))
        .route("/passkeys", post(register).get(listed))
        .route("/passkeys/{credential_id}", delete(removed))
        .route("/sign-in/passkey/options", post(sign_in_options))
        .route("/sign-in/passkey", post(sign_in))
}

/// This server as a relying party, from its public URL.
fn relying_party(state: &HttpState, route: &str) -> Result<RelyingParty, Problem> {
    let url = state.web.public_url.as_deref().unwrap_or_default();
    RelyingParty::from_public_url(url)
        .map_err(|e| flow_problem(route, &SignInFlowError::Passkey(e)))
}

/// The options of a ceremony just started.
fn answer(options: serde_json::Value) -> Response {
    (StatusCode::OK, axum::Json(options)).into_response()
}

async fn register_options(State(state): State<HttpState>, caller: Caller) -> Response {
    const ROUTE: &str = "/passkeys/options";
    let result = async {
        let user = user_of(&caller, ROUTE, FOR_USERS)?;
        recently_signed_in(&state, &caller, ROUTE)?;
        let rp = relying_party(&state, ROUTE)?;
        let options = passkeys::register_options(&state.engine, &rp, &user).await;
        options.map(answer).map_err(|e| flow_problem_as(ROUTE, "user", &e))
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}

async fn register(
    State(state): State<HttpState>,
    caller: Caller,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    const ROUTE: &str = "/passkeys";
    let result = async {
        require_json(&headers)?;
        let user = user_of(&caller, ROUTE, FOR_USERS)?;
        recently_signed_in(&state, &caller, ROUTE)?;
        let rp = relying_party(&state, ROUTE)?;
        let id = passkeys::register(&state.engine, &rp, &user, &bytes)
            .await
            .map_err(|e| flow_problem_as(ROUTE, "user", &e))?;
        Ok::<_, Problem>((StatusCode::CREATED, axum::Json(json!({"credential_id": id}))))
    };
    result.await.into_response()
}

async fn listed(State(state): State<HttpState>, caller: Caller) -> Response {
    const ROUTE: &str = "/passkeys";
    let result = async {
        let user = user_of(&caller, ROUTE, FOR_USERS)?;
        let keys = passkeys::list(&state.engine, &user)
            .await
            .map_err(|e| flow_problem_as(ROUTE, "user", &e))?;
        let keys: Vec<serde_json::Value> = keys
            .iter()
            .map(|k| {
                json!({
                    "credential_id": k.credential_id,
                    "registered_at": k.registered_at,
                    "last_used_at": k.last_used_at,
                })
            })
            .collect();
        Ok::<_, Problem>((StatusCode::OK, axum::Json(json!({"passkeys": keys}))))
    };
    result.await.into_response()
}

async fn removed(
    State(state): State<HttpState>,
    caller: Caller,
    Path(credential_id): Path<String>,
) -> Response {
    const ROUTE: &str = "/passkeys/{credential_id}";
    let result = async {
        let user = user_of(&caller, ROUTE, FOR_USERS)?;
        let removed = passkeys::remove(&state.engine, &user, &credential_id)
            .await
            .map_err(|e| flow_problem_as(ROUTE, "user", &e))?;
        if !removed {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                "No such passkey",
                "you have no passkey with that credential id",
            ));
        }
        Ok(StatusCode::NO_CONTENT)
    };
    result.await.into_response()
}

async fn sign_in_options(State(state): State<HttpState>) -> Response {
    const ROUTE: &str = "/sign-in/passkey/options";
    let result = async {
        let rp = relying_party(&state, ROUTE)?;
        let options = passkeys::sign_in_options(&state.engine, &rp).await;
        options.map(answer).map_err(|e| flow_problem(ROUTE, &e))
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}

async fn sign_in(
    State(state): State<HttpState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Response {
    const ROUTE: &str = "/sign-in/passkey";
    let result = async {
        require_json(&headers)?;
        let rp = relying_party(&state, ROUTE)?;
        signed_in(&state, ROUTE, passkeys::sign_in(&state.engine, &rp, &bytes).await)
    };
    result.await.unwrap_or_else(IntoResponse::into_response)
}
