//! Arbitrary requests against the commit HTTP surface (property-based, `proptest`): any method,
//! a route with arbitrary segments, arbitrary `Authorization`, `Idempotency-Key`, `traceparent`
//! and `Cookie` headers and an arbitrary body (bytes, or JSON of any shape). No request panics the
//! router or gets a 5xx for the caller's own mistake, and a request that is not answered 2xx
//! writes nothing. `PROPTEST_CASES` sets the number of cases (1,000 here; `make fuzz` runs more).

use axum::body::Body;
use axum::http::{HeaderValue, Request};
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::operate::keys::issue_unrecorded;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_test_env::{Env, Kind};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use tower::ServiceExt;

/// Every row a request could write, summed: unchanged unless the request succeeded.
const WRITTEN: &str = "SELECT (SELECT count(*) FROM shop_orders) + (SELECT count(*) FROM jadpo_outbox) \
    + (SELECT count(*) FROM jadpo_deliveries) + (SELECT count(*) FROM jadpo_idempotency_keys) \
    + (SELECT count(*) FROM workflow_executions) + (SELECT count(*) FROM sessions) \
    + (SELECT count(*) FROM jadpo_sessions) + (SELECT count(*) FROM jadpo_sign_in_requests) \
    + (SELECT count(*) FROM jadpo_passkey_challenges) + (SELECT count(*) FROM jadpo_audit) AS n";

/// One request's parts, before they are checked as HTTP allows.
#[derive(Debug, Clone)]
struct Attempt {
    method: &'static str,
    path: String,
    authorization: Option<String>,
    idempotency_key: Option<String>,
    traceparent: Option<String>,
    cookie: Option<String>,
    body: Vec<u8>,
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,24}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("place_order".to_owned()),
        Just("pay_order".to_owned()),
        "[a-zA-Z0-9_.~-]{0,40}",
        "(%[0-9A-F]{2}){1,6}",
    ]
}

/// A route with the method it answers (most cases), or any method on any route.
fn target() -> impl Strategy<Value = (&'static str, String)> {
    let routes = prop::sample::select(vec![
        ("POST", "/actions/{}"),
        ("POST", "/runs"),
        ("GET", "/runs/{}"),
        ("GET", "/runs/{}/events"),
        ("POST", "/runs/{}/events"),
        ("POST", "/runs/{}/cancel"),
        ("POST", "/sessions"),
        ("GET", "/sessions/{}"),
        ("PATCH", "/sessions/{}/context"),
        ("POST", "/sign-in/email"),
        ("GET", "/sign-in/link"),
        ("POST", "/sign-in/link"),
        ("POST", "/sign-in/code"),
        ("POST", "/sign-in/oidc/{}"),
        ("POST", "/sign-out"),
        ("POST", "/sign-out/everywhere"),
        ("GET", "/me"),
        ("POST", "/passkeys/options"),
        ("POST", "/passkeys"),
        ("GET", "/passkeys"),
        ("DELETE", "/passkeys/{}"),
        ("POST", "/sign-in/passkey/options"),
        ("POST", "/sign-in/passkey"),
        ("GET", "/healthz"),
        ("GET", "/readyz"),
        ("GET", "/{}"),
    ]);
    let method = prop_oneof![Just("GET"), Just("POST"), Just("PUT"), Just("PATCH"), Just("DELETE")];
    let any_method = prop::option::weighted(0.2, method);
    (routes, any_method, segment(), prop::option::of("[a-z=&%0-9]{0,20}")).prop_map(
        |((method, route), other, seg, query)| {
            let path = route.replace("{}", &seg);
            let path = match query {
                Some(q) => format!("{path}?{q}"),
                None => path,
            };
            (other.unwrap_or(method), path)
        },
    )
}

fn attempt(key: String) -> impl Strategy<Value = Attempt> {
    let authorization = prop::option::of(prop_oneof![
        Just(format!("Bearer {key}")),
        "Bearer jadpo_sk_[0-9a-f]{0,70}",
        "Bearer jadpo_at_[0-9a-zA-Z]{0,70}",
        "(Basic|bearer|Bearer) ?.{0,80}",
        ".{0,120}",
    ]);
    let body = prop_oneof![
        json_value().prop_map(|v| v.to_string().into_bytes()),
        prop::collection::vec(any::<u8>(), 0..256),
    ];
    (
        target(),
        authorization,
        prop::option::of(".{0,300}"),
        prop::option::of(prop_oneof!["00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]", ".{0,300}"]),
        prop::option::of(prop_oneof!["__Host-jadpo_session=[a-zA-Z0-9_]{0,80}", ".{0,200}"]),
        body,
    )
        .prop_map(
            |((method, path), authorization, idempotency_key, traceparent, cookie, body)| Attempt {
                method,
                path,
                authorization,
                idempotency_key,
                traceparent,
                cookie,
                body,
            },
        )
}

/// The request, with only the headers HTTP allows (a client cannot send the others).
fn request(a: &Attempt) -> Option<Request<Body>> {
    let mut request = Request::builder().method(a.method).uri(&a.path);
    let headers = [
        ("authorization", &a.authorization),
        ("idempotency-key", &a.idempotency_key),
        ("traceparent", &a.traceparent),
        ("cookie", &a.cookie),
    ];
    for (name, value) in headers {
        if let Some(value) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            request = request.header(name, value);
        }
    }
    request.header("content-type", "application/json").body(Body::from(a.body.clone())).ok()
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000)
}

#[test]
fn no_request_panics_gets_a_5xx_or_writes_without_success() {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let env = rt.block_on(Env::shop(Kind::Sqlite));
    let key = rt.block_on(async {
        let services =
            env.engine.app.services().unwrap_or_else(|| panic!("the shop lists services"));
        let sql = services.insert_if_missing_sql();
        let store = env.store("main");
        store.execute_once(&sql, &["web".into()]).await.unwrap_or_else(|e| panic!("{e}"));
        let scopes = Scopes::parse(&["*"]).unwrap_or_else(|e| panic!("{e}"));
        let clock = env.engine.clock.as_ref();
        let issued = issue_unrecorded(store.as_ref(), "web", None, &scopes, clock).await;
        issued.unwrap_or_else(|e| panic!("{e}")).secret
    });
    let web = WebSettings { public_url: Some("https://shop.test".into()), secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    let mut runner = TestRunner::new(Config { cases: cases(), ..Config::default() });
    let answered = std::cell::RefCell::new(std::collections::BTreeMap::<u16, u32>::new());
    let outcome = runner.run(&attempt(key), |a| {
        let Some(request) = request(&a) else { return Ok(()) };
        let (status, before, after) = rt.block_on(async {
            let before = env.count("main", WRITTEN).await;
            let response = router(state.clone()).oneshot(request).await;
            let response = response.unwrap_or_else(|e| panic!("{e}"));
            (response.status(), before, env.count("main", WRITTEN).await)
        });
        *answered.borrow_mut().entry(status.as_u16()).or_default() += 1;
        prop_assert!(!status.is_server_error(), "{a:?} answered {status}");
        if !status.is_success() {
            prop_assert_eq!(before, after, "{:?} answered {} and wrote", a, status);
        }
        Ok(())
    });
    let answered = answered.into_inner();
    println!("answers by status: {answered:?}");
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // The cases reached past authentication, not only its refusals.
    assert!(answered.keys().filter(|s| **s != 401).count() >= 4, "{answered:?}");
}
