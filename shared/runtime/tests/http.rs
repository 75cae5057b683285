//! The commit function's HTTP surface: authentication, errors as problem+json, idempotency.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_runtime::http::{HttpState, router};
use serde_json::{Value, json};
use support::{Env, Kind};
use tower::ServiceExt;

struct Call {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Value,
}

async fn key(env: &Env) -> String {
    let store = env.store("main");
    let issued = store.service_key_issue("web", None, env.pipeline.clock.as_ref()).await;
    issued.unwrap_or_else(|e| panic!("{e}")).secret
}

async fn call(
    env: &Env,
    method: &str,
    path: &str,
    auth: Option<&str>,
    idem: Option<&str>,
    body: &str,
) -> Call {
    let state = HttpState { pipeline: env.pipeline.clone(), keys: Arc::clone(env.store("main")) };
    let mut request =
        Request::builder().method(method).uri(path).header("content-type", "application/json");
    if let Some(key) = auth {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    if let Some(k) = idem {
        request = request.header("idempotency-key", k);
    }
    let request = request.body(Body::from(body.to_owned())).unwrap_or_else(|e| panic!("{e}"));
    let response = router(state).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Call { status, headers, body }
}

const ORDER: &str = r#"{"customer": "c1", "items": [{"sku": "A", "qty": 1}]}"#;

fn is_problem(c: &Call, status: StatusCode) -> bool {
    c.status == status
        && c.headers.get("content-type").and_then(|v| v.to_str().ok())
            == Some("application/problem+json")
        && c.body["status"] == json!(status.as_u16())
}

async fn orders(env: &Env) -> i64 {
    env.count("main", "SELECT count(*) AS n FROM shop_orders").await
}

#[tokio::test]
async fn callers_must_present_a_live_service_key() {
    let env = Env::shop(Kind::Sqlite).await;
    let missing = call(&env, "POST", "/actions/place_order", None, None, ORDER).await;
    assert!(is_problem(&missing, StatusCode::UNAUTHORIZED), "{}", missing.body);
    assert_eq!(
        missing.headers.get("www-authenticate").and_then(|v| v.to_str().ok()),
        Some("Bearer")
    );
    let forged = format!("jadpo_sk_{}", "ab".repeat(32));
    let bad = call(&env, "POST", "/actions/place_order", Some(&forged), None, ORDER).await;
    assert!(is_problem(&bad, StatusCode::UNAUTHORIZED));
    assert_eq!(orders(&env).await, 0, "an unauthenticated request ran");
    let store = env.store("main");
    let expiring = store
        .service_key_issue(
            "web",
            Some(support::t0() + chrono::Duration::minutes(5)),
            env.pipeline.clock.as_ref(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    env.clock.advance(chrono::Duration::minutes(6));
    let expired =
        call(&env, "POST", "/actions/place_order", Some(&expiring.secret), None, ORDER).await;
    assert!(is_problem(&expired, StatusCode::UNAUTHORIZED));
}

#[tokio::test]
async fn an_action_answers_201_and_bad_requests_get_problems() {
    let env = Env::shop(Kind::Sqlite).await;
    let key = key(&env).await;
    let ok = call(&env, "POST", "/actions/place_order", Some(&key), None, ORDER).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    assert!(ok.body["order_id"].is_string());
    let unknown = call(&env, "POST", "/actions/refund", Some(&key), None, "{}").await;
    assert!(is_problem(&unknown, StatusCode::NOT_FOUND), "{}", unknown.body);
    let malformed =
        call(&env, "POST", "/actions/place_order", Some(&key), None, "{\"customer\": ").await;
    assert!(is_problem(&malformed, StatusCode::BAD_REQUEST), "{}", malformed.body);
    let not_object = call(&env, "POST", "/actions/place_order", Some(&key), None, "[1]").await;
    assert!(is_problem(&not_object, StatusCode::BAD_REQUEST));
    let invalid = call(
        &env,
        "POST",
        "/actions/place_order",
        Some(&key),
        None,
        r#"{"customer":"c","items":[]}"#,
    )
    .await;
    assert!(is_problem(&invalid, StatusCode::UNPROCESSABLE_ENTITY), "{}", invalid.body);
    let bad_key =
        call(&env, "POST", "/actions/place_order", Some(&key), Some("has space"), ORDER).await;
    assert!(is_problem(&bad_key, StatusCode::BAD_REQUEST));
    let route = call(&env, "GET", "/nope", None, None, "").await;
    assert!(is_problem(&route, StatusCode::NOT_FOUND));
    assert_eq!(orders(&env).await, 1, "only the good request wrote");
    let health = call(&env, "GET", "/healthz", None, None, "").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.body["status"], "ok");
}

#[tokio::test]
async fn idempotency_over_http_replays_and_refuses() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let env = Env::shop(kind).await;
        let key = key(&env).await;
        let first =
            call(&env, "POST", "/actions/place_order", Some(&key), Some("k-1"), ORDER).await;
        let second =
            call(&env, "POST", "/actions/place_order", Some(&key), Some("k-1"), ORDER).await;
        assert_eq!((first.status, second.status), (StatusCode::CREATED, StatusCode::CREATED));
        assert_eq!(first.body, second.body);
        assert!(first.headers.get("idempotency-replayed").is_none());
        assert_eq!(
            second.headers.get("idempotency-replayed").and_then(|v| v.to_str().ok()),
            Some("true")
        );
        let other = r#"{"customer": "c2", "items": [{"sku": "A", "qty": 1}]}"#;
        let reused =
            call(&env, "POST", "/actions/place_order", Some(&key), Some("k-1"), other).await;
        assert!(is_problem(&reused, StatusCode::UNPROCESSABLE_ENTITY), "{}", reused.body);
        assert_eq!(orders(&env).await, 1, "{kind:?}");
    }
}
