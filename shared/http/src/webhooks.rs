//! `POST /webhooks/{source}`: a declared source's events. The principal is the provider, proven
//! by the request's signature under the source's secrets (no credential header is read); the
//! handler parses, makes one call (`engine::services::webhooks::receive::receive`) and answers:
//! `200` with the event's receipt (a duplicate with the original one, changing nothing), `200`
//! with the challenge for a URL-verification handshake, `400` for a request that proves nothing
//! (no row is written), `404` for an undeclared source, `413` over the source's body limit, `429`
//! over its rate (with `Retry-After`; before any database work), and the action's own refusal.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jadpo_engine::services::webhooks::receive::{Incoming, ReceiveError, Received, receive};

use super::{HttpState, commit_problem, problem};

/// The largest body any source may declare; each source's own limit is checked before any work.
const ROUTE_BODY_LIMIT: usize = 16 << 20;

/// The route, to merge into the commit router.
pub(super) fn routes() -> Router<HttpState> {
    Router::new().route(
        "/webhooks/{source}",
        post(take).layer(axum::extract::DefaultBodyLimit::max(ROUTE_BODY_LIMIT)),
    )
}

async fn take(
    State(state): State<HttpState>,
    Path(source): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let headers: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    if let Some(declared) = state.engine.app.webhook(&source) {
        if let Err(seconds) = state.webhook_buckets.admit(declared, state.engine.clock.now()) {
            return too_many(&source, seconds);
        }
    }
    let secrets = state.webhook_secrets.get(&source).map_or(&[][..], Vec::as_slice);
    let incoming = Incoming { source: &source, headers: &headers, body: &body, secrets };
    match receive(&state.engine, incoming).await {
        Ok(Received::Receipt { body, duplicate }) => {
            let mut response = (StatusCode::OK, axum::Json(body)).into_response();
            if duplicate {
                response
                    .headers_mut()
                    .insert("webhook-duplicate", HeaderValue::from_static("true"));
            }
            response
        }
        Ok(Received::Challenge(challenge)) => {
            (StatusCode::OK, axum::Json(serde_json::json!({"challenge": challenge})))
                .into_response()
        }
        Err(e @ ReceiveError::UnknownSource(_)) => {
            problem(StatusCode::NOT_FOUND, "Unknown webhook source", &e.to_string())
        }
        Err(e @ ReceiveError::TooLarge { .. }) => {
            problem(StatusCode::PAYLOAD_TOO_LARGE, "Body too large", &e.to_string())
        }
        Err(ReceiveError::Refused(e)) => {
            tracing::warn!(%source, reason = %e, "webhook refused");
            problem(StatusCode::BAD_REQUEST, "Webhook not verified", &e.to_string())
        }
        Err(ReceiveError::Commit(e)) => commit_problem(&e),
    }
}

fn too_many(source: &str, seconds: u64) -> Response {
    tracing::warn!(%source, "webhook over its source's rate");
    let mut response = problem(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests",
        &format!("source {source:?} is over its rate; try again in {seconds} s"),
    );
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
    }
    response
}
