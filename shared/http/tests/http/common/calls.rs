//! Requests to the router as a service or user would make them, and what they answer: the helpers
//! the HTTP tests of routes share.

#![allow(dead_code, reason = "each test binary uses its own part of these helpers")]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_test_env::Env;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::scoped_key;

pub(crate) struct Call {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

pub(crate) async fn key(env: &Env) -> String {
    scoped_key(env, "web", &["*"], None).await
}

pub(crate) async fn call(
    env: &Env,
    method: &str,
    path: &str,
    auth: Option<&str>,
    idem: Option<&str>,
    body: &str,
) -> Call {
    call_with(env, method, path, auth, idem, &[], body).await
}

pub(crate) async fn call_with(
    env: &Env,
    method: &str,
    path: &str,
    auth: Option<&str>,
    idem: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Call {
    let web = WebSettings { public_url: Some("https://shop.test".into()), secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    send(&state, method, path, (auth, idem), headers, body).await
}

/// One request to the router over `state`, with a bearer key and an Idempotency-Key if given.
pub(crate) async fn send(
    state: &HttpState,
    method: &str,
    path: &str,
    (auth, idem): (Option<&str>, Option<&str>),
    headers: &[(&str, &str)],
    body: &str,
) -> Call {
    let mut request =
        Request::builder().method(method).uri(path).header("content-type", "application/json");
    if let Some(key) = auth {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    if let Some(k) = idem {
        request = request.header("idempotency-key", k);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Body::from(body.to_owned())).unwrap_or_else(|e| panic!("{e}"));
    let response = router(state.clone()).oneshot(request).await;
    let response = response.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Call { status, headers, body }
}

pub(crate) fn is_problem(c: &Call, status: StatusCode) -> bool {
    c.status == status
        && c.headers.get("content-type").and_then(|v| v.to_str().ok())
            == Some("application/problem+json")
        && c.body["status"] == json!(status.as_u16())
}
