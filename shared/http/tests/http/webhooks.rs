//! `POST /webhooks/{source}` on both adapters, acting for the provider its signature proves: the
//! provider is answered `200` with the event's receipt, a copy `200` with the same receipt and
//! `Webhook-Duplicate: true`; no one (an unsigned request) and someone else (another secret, a
//! service key instead of a signature) get `400` and write nothing; an undeclared source is
//! `404`, a body over the source's limit `413`; every refusal is a problem document.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_test_env::webhooks::{
    GH_SECRET, github_signature, standard_headers, webhook_app, webhook_secrets,
};
use jadpo_test_env::{Env, Kind};
use serde_json::Value;
use tower::ServiceExt;

struct Got {
    status: StatusCode,
    duplicate: bool,
    problem: bool,
    json: Value,
    retry_after: Option<String>,
}

fn state(env: &Env) -> HttpState {
    let web = WebSettings { public_url: None, secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    state.with_webhook_secrets(webhook_secrets())
}

async fn post(env: &Env, source: &str, headers: &[(&str, String)], body: Vec<u8>) -> Got {
    send(state(env), source, headers, body).await
}

async fn send(state: HttpState, source: &str, headers: &[(&str, String)], body: Vec<u8>) -> Got {
    let mut request = Request::builder().method("POST").uri(format!("/webhooks/{source}"));
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request.body(Body::from(body)).unwrap_or_else(|e| panic!("{e}"));
    let response = router(state).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let duplicate = response.headers().get("webhook-duplicate").is_some();
    let retry_after =
        response.headers().get("retry-after").and_then(|v| v.to_str().ok().map(str::to_owned));
    let problem = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap_or_default();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Got { status, duplicate, problem, json, retry_after }
}

async fn receipts(env: &Env) -> i64 {
    env.count("main", "SELECT count(*) AS n FROM jadpo_webhook_receipts").await
}

async fn the_provider_is_answered_its_receipt_once(kind: Kind) {
    let env = Env::new(kind, webhook_app(), jadpo_engine::EngineSettings::default()).await;
    let body = br#"{"amount": 300}"#.to_vec();
    let signed = [("x-hub-signature-256", github_signature(GH_SECRET, &body))];
    let first = post(&env, "gh", &signed, body.clone()).await;
    assert_eq!((first.status, first.duplicate), (StatusCode::OK, false), "{}", first.json);
    let receipt = first.json["receipt"].as_str().map(str::to_owned);
    assert!(receipt.is_some(), "{}", first.json);
    let again = post(&env, "gh", &signed, body.clone()).await;
    assert_eq!((again.status, again.duplicate), (StatusCode::OK, true));
    assert_eq!(again.json["receipt"].as_str().map(str::to_owned), receipt);
    assert_eq!(receipts(&env).await, 1);
}

async fn no_one_and_someone_else_are_refused(kind: Kind) {
    let env = Env::new(kind, webhook_app(), jadpo_engine::EngineSettings::default()).await;
    let body = br#"{"amount": 1}"#.to_vec();
    let other = [("x-hub-signature-256", github_signature("someone else's", &body))];
    let key = [("authorization", "Bearer jadpo_sk_not_a_signature".to_owned())];
    for headers in [&[][..], &other[..], &key[..]] {
        let refused = post(&env, "gh", headers, body.clone()).await;
        assert_eq!(
            (refused.status, refused.problem),
            (StatusCode::BAD_REQUEST, true),
            "{}",
            refused.json
        );
    }
    let signed = [("x-hub-signature-256", github_signature(GH_SECRET, &body))];
    let unknown = post(&env, "nope", &signed, body.clone()).await;
    assert_eq!((unknown.status, unknown.problem), (StatusCode::NOT_FOUND, true));
    let big = vec![b'x'; (1 << 20) + 1];
    let signed = [("x-hub-signature-256", github_signature(GH_SECRET, &big))];
    let large = post(&env, "gh", &signed, big).await;
    assert_eq!((large.status, large.problem), (StatusCode::PAYLOAD_TOO_LARGE, true));
    assert_eq!(receipts(&env).await, 0, "a refused request wrote a receipt");
}

async fn a_source_over_its_rate_is_answered_429(kind: Kind) {
    let env = Env::new(kind, webhook_app(), jadpo_engine::EngineSettings::default()).await;
    let state = state(&env);
    let mut statuses = Vec::new();
    for n in 0..3 {
        let body = format!(r#"{{"amount": {n}}}"#).into_bytes();
        let headers =
            standard_headers(&format!("msg_{n}"), jadpo_test_env::t0().timestamp(), &body);
        let headers: Vec<(&str, String)> =
            headers.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let got = send(state.clone(), "sw", &headers, body).await;
        statuses.push((got.status, got.retry_after, got.problem));
    }
    let ok = (StatusCode::OK, None, false);
    let over = (StatusCode::TOO_MANY_REQUESTS, Some("1".to_owned()), true);
    assert_eq!(statuses, [ok.clone(), ok, over], "a burst of two, then one a second");
    assert_eq!(receipts(&env).await, 2, "the request over the rate wrote something");
}

jadpo_test_env::both!(
    the_provider_is_answered_its_receipt_once,
    no_one_and_someone_else_are_refused,
    a_source_over_its_rate_is_answered_429,
);
