//! The commit function's HTTP surface: authentication, errors as problem+json, idempotency.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_http::{HttpState, router};
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Call {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Value,
}

async fn key(env: &Env) -> String {
    let store = env.store("main");
    let issued = store.service_key_issue("web", None, env.engine.clock.as_ref()).await;
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
    let state = HttpState { engine: env.engine.clone(), keys: Arc::clone(env.store("main")) };
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
            Some(jadpo_test_env::t0() + chrono::Duration::minutes(5)),
            env.engine.clock.as_ref(),
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

#[tokio::test]
async fn runs_and_sessions_over_http() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let mut env = Env::shop(kind).await;
        let key = key(&env).await;
        let k = Some(key.as_str());
        let started = call(
            &env,
            "POST",
            "/runs",
            k,
            None,
            r#"{"workflow": "checkout", "input": {"order_id": "o-9"}}"#,
        )
        .await;
        assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
        let run = started.body["run_id"].as_str().unwrap_or_default().to_owned();
        assert_eq!(started.body["status"], "running");
        env.drain().await;
        let got = call(&env, "GET", &format!("/runs/{run}"), k, None, "").await;
        assert_eq!(
            (got.status, got.body["status"].clone()),
            (StatusCode::OK, json!("waiting")),
            "{}",
            got.body
        );
        let revision = got.body["revision"].as_u64().unwrap_or(0);
        let events = call(&env, "GET", &format!("/runs/{run}/events"), k, None, "").await;
        let seqs: Vec<u64> = events.body["events"]
            .as_array()
            .map(|a| a.iter().filter_map(|e| e["seq"].as_u64()).collect())
            .unwrap_or_default();
        assert_eq!(
            seqs,
            (1..=revision).collect::<Vec<_>>(),
            "events in seq order, revision = last seq"
        );
        assert_eq!(events.body["events"][0]["id"], json!(format!("{run}:1")));
        let stale = format!(
            r#"{{"type": "shipment.confirmed", "payload": {{}}, "expected_revision": {}}}"#,
            revision - 1
        );
        let stale = call(&env, "POST", &format!("/runs/{run}/events"), k, None, &stale).await;
        assert!(is_problem(&stale, StatusCode::CONFLICT), "{}", stale.body);
        let ok = format!(
            r#"{{"type": "shipment.confirmed", "payload": {{"carrier": "ups"}}, "expected_revision": {revision}}}"#
        );
        let done = call(&env, "POST", &format!("/runs/{run}/events"), k, None, &ok).await;
        assert_eq!(
            (done.status, done.body["status"].clone()),
            (StatusCode::OK, json!("completed")),
            "{}",
            done.body
        );
        let missing = call(&env, "GET", "/runs/nope", k, None, "").await;
        assert!(is_problem(&missing, StatusCode::NOT_FOUND));
        let unknown = call(
            &env,
            "POST",
            "/runs",
            k,
            None,
            r#"{"workflow": "refund_everything", "input": {}}"#,
        )
        .await;
        assert!(is_problem(&unknown, StatusCode::UNPROCESSABLE_ENTITY), "{}", unknown.body);
        let unauthenticated = call(&env, "GET", &format!("/runs/{run}"), None, None, "").await;
        assert!(is_problem(&unauthenticated, StatusCode::UNAUTHORIZED));

        let session = call(
            &env,
            "POST",
            "/sessions",
            k,
            None,
            r#"{"user_id": "alice", "context": {"tenant": "t1"}}"#,
        )
        .await;
        assert_eq!(session.status, StatusCode::CREATED, "{}", session.body);
        let sid = session.body["id"].as_str().unwrap_or_default().to_owned();
        assert_eq!(
            (session.body["revision"].clone(), session.body["context_revision"].clone()),
            (json!(0), json!(0))
        );
        let foreign =
            call(&env, "GET", &format!("/sessions/{sid}?user_id=mallory"), k, None, "").await;
        assert!(
            is_problem(&foreign, StatusCode::NOT_FOUND),
            "another user's session must look absent"
        );
        let patch = |rev: i64| {
            format!(
                r#"{{"user_id": "alice", "patch": {{"lang": "fr"}}, "expected_revision": {rev}}}"#
            )
        };
        let stale =
            call(&env, "PATCH", &format!("/sessions/{sid}/context"), k, None, &patch(3)).await;
        assert!(is_problem(&stale, StatusCode::CONFLICT));
        let patched =
            call(&env, "PATCH", &format!("/sessions/{sid}/context"), k, None, &patch(0)).await;
        assert_eq!(
            patched.body["context"],
            json!({"tenant": "t1", "lang": "fr"}),
            "{}",
            patched.body
        );
        let in_session = format!(
            r#"{{"workflow": "checkout", "input": {{"order_id": "o-10"}}, "session_id": "{sid}", "user_id": "alice"}}"#
        );
        let bound = call(&env, "POST", "/runs", k, None, &in_session).await;
        assert_eq!(bound.status, StatusCode::CREATED, "{}", bound.body);
        let view = call(&env, "GET", &format!("/sessions/{sid}?user_id=alice"), k, None, "").await;
        assert_eq!(view.body["active_run_id"], bound.body["run_id"]);
        assert_eq!(view.body["revision"], json!(2));
        let no_user =
            format!(r#"{{"workflow": "checkout", "input": {{}}, "session_id": "{sid}"}}"#);
        let no_user = call(&env, "POST", "/runs", k, None, &no_user).await;
        assert!(is_problem(&no_user, StatusCode::BAD_REQUEST));
        let bound_run = bound.body["run_id"].as_str().unwrap_or_default();
        let cancelled = call(&env, "POST", &format!("/runs/{bound_run}/cancel"), k, None, "").await;
        assert_eq!(cancelled.body["status"], "cancelling", "{}", cancelled.body);
    }
}
