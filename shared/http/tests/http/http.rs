//! The commit function's HTTP surface: authentication, errors as problem+json, idempotency, and
//! every route acting for its principal (the workflow routes' own behaviour: `runs.rs`).

use std::sync::Arc;

use axum::http::StatusCode;
use jadpo_http::{HttpState, WebSettings};
use jadpo_test_env::{Env, Kind};
use serde_json::json;

use crate::common;

use common::calls::{call, call_with, is_problem, key, send};
use common::scoped_key;

const ORDER: &str = r#"{"customer": "c1", "items": [{"sku": "A", "qty": 1}]}"#;

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
    // No one learns which actions exist: an unknown action asks for a credential first.
    let unknown = call(&env, "POST", "/actions/refund", None, None, "{}").await;
    assert!(is_problem(&unknown, StatusCode::UNAUTHORIZED), "{}", unknown.body);
    let unknown_forged = call(&env, "POST", "/actions/refund", Some(&forged), None, "{}").await;
    assert!(is_problem(&unknown_forged, StatusCode::UNAUTHORIZED), "{}", unknown_forged.body);
    let soon = Some(jadpo_test_env::t0() + chrono::Duration::minutes(5));
    let expiring = scoped_key(&env, "web", &["*"], soon).await;
    env.clock.advance(chrono::Duration::minutes(6));
    let expired = call(&env, "POST", "/actions/place_order", Some(&expiring), None, ORDER).await;
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
    // A rejection by the framework itself (a body over its 2 MB limit) is a problem too.
    let huge = format!("{{\"pad\": \"{}\"}}", "a".repeat(3 << 20));
    let too_big = call(&env, "POST", "/actions/place_order", Some(&key), None, &huge).await;
    assert!(is_problem(&too_big, StatusCode::PAYLOAD_TOO_LARGE), "{}", too_big.body);
    for (method, path) in [("DELETE", "/healthz"), ("GET", "/actions/place_order")] {
        let wrong = call(&env, method, path, Some(&key), None, "").await;
        assert!(
            is_problem(&wrong, StatusCode::METHOD_NOT_ALLOWED),
            "{method} {path}: {}",
            wrong.body
        );
    }
    assert_eq!(orders(&env).await, 1, "only the good request wrote");
    let health = call(&env, "GET", "/healthz", None, None, "").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.body["status"], "ok");
}

#[tokio::test]
async fn a_full_queue_answers_503_busy_and_runs_nothing() {
    let mut env = Env::shop(Kind::Sqlite).await;
    let (queue, mut rx, backlog) = jadpo_local::queue::InProcessQueue::counted();
    env.engine.queue = Arc::new(queue);
    env.engine.settings.max_backlog = 2;
    let key = key(&env).await;
    let first = call(&env, "POST", "/actions/place_order", Some(&key), None, ORDER).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    // Its two deliveries fill the queue to the limit: the next order is refused untouched.
    let busy = call(&env, "POST", "/actions/place_order", Some(&key), Some("o-2"), ORDER).await;
    assert!(is_problem(&busy, StatusCode::SERVICE_UNAVAILABLE), "{}", busy.body);
    assert_eq!(busy.body["title"], "Busy", "{}", busy.body);
    let detail = busy.body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("holds 2 messages") && detail.contains("JADPO_MAX_BACKLOG"),
        "{detail}"
    );
    assert_eq!(busy.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("5"));
    assert_eq!(orders(&env).await, 1, "the refused request wrote nothing");
    // A sign-in mail is delivery work too: refused alike, nothing requested.
    let mail = r#"{"email": "flood@example.com"}"#;
    let asked = call(&env, "POST", "/sign-in/email", None, None, mail).await;
    assert!(is_problem(&asked, StatusCode::SERVICE_UNAVAILABLE), "{}", asked.body);
    assert_eq!(asked.body["title"], "Busy", "{}", asked.body);
    let requests = "SELECT count(*) AS n FROM jadpo_sign_in_requests";
    assert_eq!(env.count("main", requests).await, 0, "a refused sign-in mail was requested");
    let claimed = "SELECT count(*) AS n FROM jadpo_idempotency_keys";
    assert_eq!(env.count("main", claimed).await, 0, "nor claimed its key");
    // Once the delivery side has taken them, the retry is admitted.
    for _ in 0..2 {
        rx.try_recv().unwrap_or_else(|e| panic!("{e}"));
        backlog.finished();
    }
    let retry = call(&env, "POST", "/actions/place_order", Some(&key), Some("o-2"), ORDER).await;
    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.body);
    assert_eq!(orders(&env).await, 2);
}

/// A store that never answers: PostgreSQL on a port nothing listens on.
fn unreachable_store(name: &str) -> Arc<dyn jadpo_core::Store> {
    let options = jadpo_store_postgres::PgOptions {
        pool_size: 1,
        connect_timeout: std::time::Duration::from_millis(500),
        acquire_timeout: std::time::Duration::from_millis(500),
    };
    let url = "postgres://postgres@127.0.0.1:1/nothing";
    let store = jadpo_store_postgres::Postgres::connect(name, url, &options);
    Arc::new(store.unwrap_or_else(|e| panic!("{e}")))
}

/// `GET /readyz` on `state`, with a bearer credential or none: the status and the body's text.
async fn ready(state: &HttpState, auth: Option<&str>) -> (StatusCode, String) {
    let answer = send(state, "GET", "/readyz", (auth, None), &[], "").await;
    (answer.status, answer.body.to_string())
}

#[tokio::test]
async fn liveness_touches_no_store_and_readiness_is_cached_and_tells_strangers_little() {
    let env = Env::shop(Kind::Sqlite).await;
    let key = key(&env).await;
    let web = WebSettings { public_url: None, secure_cookies: true };
    let healthy = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    // The same process (its readiness answer shared) after the warehouse's database went away.
    let mut broken = healthy.clone();
    broken.engine.stores.insert("warehouse".to_owned(), unreachable_store("warehouse"));

    let (status, body) = ready(&healthy, None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, r#"{"status":"ready"}"#));
    let live = send(&broken, "GET", "/healthz", (None, None), &[], "").await;
    assert_eq!(live.status, StatusCode::OK, "liveness asked a store");

    let (status, _) = ready(&broken, None).await;
    assert_eq!(status, StatusCode::OK, "within the window the last answer is reused");
    env.clock.advance(chrono::Duration::seconds(6));
    let (status, stranger) = ready(&broken, None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{stranger}");
    for secret in ["warehouse", "127.0.0.1", "postgres", "onnect"] {
        assert!(!stranger.contains(secret), "an anonymous caller was told {secret:?}: {stranger}");
    }
    let (status, operator) = ready(&broken, Some(&key)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{operator}");
    assert!(operator.contains("warehouse"), "a service key's caller is told which: {operator}");
    // A key for the application's own work (not `operations`) is told no more than a stranger.
    for scope in ["actions", "runs"] {
        let app_key = scoped_key(&env, "web", &[scope], None).await;
        let (status, told) = ready(&broken, Some(&app_key)).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{told}");
        assert!(!told.contains("warehouse"), "a {scope} key was told the store: {told}");
    }
    let monitor = scoped_key(&env, "web", &["operations"], None).await;
    let (_, told) = ready(&broken, Some(&monitor)).await;
    assert!(told.contains("warehouse"), "an operations key is told which: {told}");

    let (status, _) = ready(&healthy, None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "the failing answer is reused too");
    env.clock.advance(chrono::Duration::seconds(6));
    let (status, told) = ready(&healthy, Some(&key)).await;
    assert_eq!(status, StatusCode::OK, "{told}");
    assert!(told.contains(r#""store":"warehouse""#), "a service key's caller sees each: {told}");
}

#[tokio::test]
async fn a_malformed_bearer_credential_costs_no_store_call() {
    let mut env = Env::shop(Kind::Sqlite).await;
    env.engine.stores.insert("main".to_owned(), unreachable_store("main"));
    let unknown = format!("jadpo_sk_{}", "ab".repeat(32));
    let well_formed = call(&env, "POST", "/actions/place_order", Some(&unknown), None, ORDER).await;
    assert!(is_problem(&well_formed, StatusCode::SERVICE_UNAVAILABLE), "{}", well_formed.body);
    for malformed in ["nonsense", "jadpo_sk_short", "jadpo_tok_zz", &"x".repeat(5000)] {
        let refused =
            call(&env, "POST", "/actions/place_order", Some(malformed), None, ORDER).await;
        assert!(
            is_problem(&refused, StatusCode::UNAUTHORIZED),
            "{malformed:.20}: asked the store ({}): {}",
            refused.status,
            refused.body
        );
    }
}

#[tokio::test]
async fn trace_headers_are_kept_when_well_formed_and_dropped_otherwise() {
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let long = format!("{PARENT}-{}", "a".repeat(4096));
    let cases: [(&str, &str, Option<&str>, Option<&str>); 4] = [
        (PARENT, "congo=t61rcWkgMzE", Some(PARENT), Some("congo=t61rcWkgMzE")),
        (PARENT, "no value here", Some(PARENT), None),
        ("00-not-a-trace-01", "congo=t61rcWkgMzE", None, None),
        (&long, "a=1", None, None),
    ];
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let env = Env::shop(kind).await;
        let key = key(&env).await;
        for (parent, state, want_parent, want_state) in cases {
            let headers = [("traceparent", parent), ("tracestate", state)];
            let placed =
                call_with(&env, "POST", "/actions/place_order", Some(&key), None, &headers, ORDER);
            let placed = placed.await;
            assert_eq!(placed.status, StatusCode::CREATED, "{kind:?}: a bad trace header refused");
            let order = placed.body["order_id"].as_str().unwrap_or_default().to_owned();
            let store = env.store("main");
            let sql = "SELECT traceparent, tracestate FROM jadpo_outbox WHERE payload LIKE $1";
            let rows = store.query_once(sql, &[format!("%{order}%").into()]).await;
            let rows = rows.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(rows.len(), 1, "{kind:?}: the order's event");
            let stored = |c: &str| rows[0].get_opt_str(c).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(stored("traceparent"), want_parent, "{kind:?}: {parent:.40}");
            assert_eq!(stored("tracestate"), want_state, "{kind:?}: {state}");
        }
    }
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
        // The same JSON spaced and ordered otherwise is the same request: replayed.
        let respaced =
            "{ \"items\" : [ { \"qty\": 1, \"sku\": \"A\" } ],\n  \"customer\": \"c1\" }";
        let same = call(&env, "POST", "/actions/place_order", Some(&key), Some("k-1"), respaced);
        let same = same.await;
        assert_eq!((same.status, &same.body), (StatusCode::CREATED, &first.body), "{kind:?}");
        let replayed = same.headers.get("idempotency-replayed").and_then(|v| v.to_str().ok());
        assert_eq!(replayed, Some("true"), "{kind:?}: a respaced body was not replayed");
        let other = r#"{"customer": "c2", "items": [{"sku": "A", "qty": 1}]}"#;
        let reused =
            call(&env, "POST", "/actions/place_order", Some(&key), Some("k-1"), other).await;
        assert!(is_problem(&reused, StatusCode::UNPROCESSABLE_ENTITY), "{}", reused.body);
        assert_eq!(orders(&env).await, 1, "{kind:?}");
    }
}

/// What another principal's (or no principal's) request may not touch: every `/runs` and
/// `/sessions` route, each tried as a second service (404, as if absent) and with no credential
/// (401), and the first service's run and Session unchanged afterwards.
async fn every_route_acts_for_its_principal_only(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let owner = key(&env).await;
    let other = scoped_key(&env, "intruder", &["*"], None).await;
    let mine = Some(owner.as_str());
    let session = r#"{"user_id": "alice", "context": {"tenant": "t1"}}"#;
    let session = call(&env, "POST", "/sessions", mine, None, session).await;
    let sid = session.body["id"].as_str().unwrap_or_default().to_owned();
    let run = format!(
        r#"{{"workflow": "checkout", "input": {{"order_id": "o-1"}}, "session_id": "{sid}"}}"#
    );
    let run = call(&env, "POST", "/runs", mine, None, &run).await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let rid = run.body["run_id"].as_str().unwrap_or_default().to_owned();
    env.drain().await;
    let before_run = call(&env, "GET", &format!("/runs/{rid}"), mine, None, "").await;
    let before_session = call(&env, "GET", &format!("/sessions/{sid}"), mine, None, "").await;
    assert_eq!(before_run.status, StatusCode::OK, "{}", before_run.body);
    assert_eq!(before_session.status, StatusCode::OK, "{}", before_session.body);
    let revision = before_run.body["revision"].as_u64().unwrap_or(0);

    let event = format!(
        r#"{{"type": "shipment.confirmed", "payload": {{}}, "expected_revision": {revision}}}"#
    );
    let routes: Vec<(&str, String, String)> = vec![
        ("GET", format!("/runs/{rid}"), String::new()),
        ("GET", format!("/runs/{rid}/events"), String::new()),
        ("POST", format!("/runs/{rid}/events"), event),
        ("POST", format!("/runs/{rid}/cancel"), String::new()),
        ("GET", format!("/sessions/{sid}"), String::new()),
        (
            "PATCH",
            format!("/sessions/{sid}/context"),
            r#"{"patch": {"tenant": "evil"}, "expected_revision": 1}"#.to_owned(),
        ),
        (
            "POST",
            "/runs".to_owned(),
            format!(
                r#"{{"workflow": "checkout", "input": {{"order_id": "o-2"}}, "session_id": "{sid}"}}"#
            ),
        ),
    ];
    for (method, path, body) in &routes {
        let foreign = call(&env, method, path, Some(&other), None, body).await;
        assert!(
            is_problem(&foreign, StatusCode::NOT_FOUND),
            "{method} {path} as another: {} {}",
            foreign.status,
            foreign.body
        );
        let anonymous = call(&env, method, path, None, None, body).await;
        assert!(
            is_problem(&anonymous, StatusCode::UNAUTHORIZED),
            "{method} {path} as no one: {}",
            anonymous.status
        );
    }
    let after_run = call(&env, "GET", &format!("/runs/{rid}"), mine, None, "").await;
    let after_session = call(&env, "GET", &format!("/sessions/{sid}"), mine, None, "").await;
    assert_eq!(after_run.body, before_run.body, "another principal changed the run");
    assert_eq!(after_session.body, before_session.body, "another principal changed the Session");
    let runs = env.count("main", "SELECT count(*) AS n FROM workflow_executions").await;
    assert_eq!(runs, 1, "another principal started a run in someone else's Session");
    // The owner still can.
    let cancelled = call(&env, "POST", &format!("/runs/{rid}/cancel"), mine, None, "").await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.body);
}

/// A service key does only what its scopes allow (403 otherwise, nothing written); a revoked
/// key authenticates nobody (401).
async fn a_key_does_only_what_its_scopes_allow(kind: Kind) {
    let env = Env::shop(kind).await;
    let orders_only = scoped_key(&env, "web", &["action:place_order"], None).await;
    let runs_only = scoped_key(&env, "ops", &["runs"], None).await;
    let placed = call(&env, "POST", "/actions/place_order", Some(&orders_only), None, ORDER).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.body);
    let start = r#"{"workflow": "checkout", "input": {"order_id": "o-1"}}"#;
    let refused = call(&env, "POST", "/runs", Some(&orders_only), None, start).await;
    assert!(is_problem(&refused, StatusCode::FORBIDDEN), "{} {}", refused.status, refused.body);
    assert!(
        refused.body["detail"].as_str().unwrap_or_default().contains("runs"),
        "{}",
        refused.body
    );
    let session = r#"{"user_id": "alice"}"#;
    let refused = call(&env, "POST", "/sessions", Some(&runs_only), None, session).await;
    assert!(is_problem(&refused, StatusCode::FORBIDDEN), "{}", refused.body);
    let refused = call(&env, "POST", "/actions/place_order", Some(&runs_only), None, ORDER).await;
    assert!(is_problem(&refused, StatusCode::FORBIDDEN), "{}", refused.body);
    assert_eq!(orders(&env).await, 1, "a refused request wrote");
    let runs = env.count("main", "SELECT count(*) AS n FROM workflow_executions").await;
    assert_eq!(runs, 0, "a refused request started a run");
    let started = call(&env, "POST", "/runs", Some(&runs_only), None, start).await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);

    let store = env.store("main");
    let id = store.service_keys_list().await.unwrap_or_else(|e| panic!("{e}"));
    let id = id.iter().find(|k| k.service == "web").map(|k| k.id.clone()).unwrap_or_default();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let now = env.engine.clock.now();
    let revoked = store.service_key_revoke(tx.as_mut(), &id, now).await;
    assert_eq!(revoked.ok(), Some(true));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let after = call(&env, "POST", "/actions/place_order", Some(&orders_only), None, ORDER).await;
    assert!(is_problem(&after, StatusCode::UNAUTHORIZED), "a revoked key worked: {}", after.body);
}

/// A user, known by an API token, acts as themself: their Session's user is theirs and cannot be
/// named, another user's Session and run answer 404, an order is their own (never the body's), and
/// a token whose user was signed out everywhere authenticates nobody (401).
async fn a_user_acts_as_themself(kind: Kind) {
    let env = Env::shop(kind).await;
    let until = jadpo_test_env::t0() + chrono::Duration::days(1);
    let clock = env.engine.clock.as_ref();
    let store = env.store("main");
    let token = |user: &'static str| {
        let store = Arc::clone(store);
        async move {
            let issued =
                jadpo_engine::operate::tokens::issue_unrecorded(store.as_ref(), user, until, clock);
            issued.await.unwrap_or_else(|e| panic!("{e}")).secret
        }
    };
    for (id, email) in [("alice", "alice@example.com"), ("bob", "bob@example.com")] {
        let sql = format!("INSERT INTO shop_customers (id, email) VALUES ('{id}', '{email}')");
        store.execute_once(&sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let (alice, bob) = (token("alice").await, token("bob").await);
    let named = call(&env, "POST", "/sessions", Some(&alice), None, r#"{"user_id": "bob"}"#).await;
    assert!(is_problem(&named, StatusCode::BAD_REQUEST), "a user named another: {}", named.body);
    let own = call(&env, "POST", "/sessions", Some(&alice), None, r#"{"context": {"a": 1}}"#).await;
    assert_eq!(own.status, StatusCode::CREATED, "{}", own.body);
    let sid = own.body["id"].as_str().unwrap_or_default().to_owned();
    let view = call(&env, "GET", &format!("/sessions/{sid}"), Some(&alice), None, "").await;
    assert_eq!(view.body["user_id"], json!("alice"), "{}", view.body);
    let start = format!(
        r#"{{"workflow": "checkout", "input": {{"order_id": "o-1"}}, "session_id": "{sid}"}}"#
    );
    let run = call(&env, "POST", "/runs", Some(&alice), None, &start).await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let rid = run.body["run_id"].as_str().unwrap_or_default().to_owned();
    for path in [format!("/sessions/{sid}"), format!("/runs/{rid}")] {
        let foreign = call(&env, "GET", &path, Some(&bob), None, "").await;
        assert!(is_problem(&foreign, StatusCode::NOT_FOUND), "{path} as bob: {}", foreign.body);
    }
    // `place_order` is declared for signed-in users too: the customer is the user, never the body.
    let for_c1 = call(&env, "POST", "/actions/place_order", Some(&alice), None, ORDER).await;
    assert!(is_problem(&for_c1, StatusCode::UNPROCESSABLE_ENTITY), "{}", for_c1.body);
    assert_eq!(orders(&env).await, 0);
    let own = r#"{"items": [{"sku": "A", "qty": 1}]}"#;
    let action = call(&env, "POST", "/actions/place_order", Some(&alice), None, own).await;
    assert_eq!(action.status, StatusCode::CREATED, "{}", action.body);
    let mine = "SELECT count(*) AS n FROM shop_orders WHERE customer = 'alice'";
    assert_eq!(env.count("main", mine).await, 1);
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let ended = store.user_sessions_end(tx.as_mut(), "alice", env.engine.clock.now()).await;
    assert_eq!(ended.ok(), Some(1));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let after = call(&env, "GET", &format!("/sessions/{sid}"), Some(&alice), None, "").await;
    assert!(
        is_problem(&after, StatusCode::UNAUTHORIZED),
        "a signed-out token worked: {}",
        after.body
    );
    let still = call(&env, "GET", &format!("/runs/{rid}"), Some(&bob), None, "").await;
    assert!(is_problem(&still, StatusCode::NOT_FOUND));
}

/// An application that declares no users has no sessions table: a well-formed API token or
/// browser session is refused with 401 (not a 500 from a missing table), before any action runs,
/// and a service key still works.
async fn user_credentials_to_an_app_without_users_are_refused(kind: Kind) {
    use jadpo_application::{Application, Callers};
    let app = Application::builder("plain")
        .store("main")
        .action_for("who", "main", Callers::anyone(), common::WhoAmI)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let env = Env::new(kind, app, jadpo_engine::EngineSettings::default()).await;
    let token = format!("jadpo_at_{}", "ab".repeat(32));
    let by_token = call(&env, "POST", "/actions/who", Some(&token), None, "{}").await;
    assert!(is_problem(&by_token, StatusCode::UNAUTHORIZED), "{}", by_token.body);
    assert!(by_token.body["detail"].as_str().is_some_and(|d| d.contains("no users")));
    let cookie = format!("__Host-jadpo_session=jadpo_bs_{}", "cd".repeat(32));
    let by_cookie = call_with(&env, "GET", "/runs/x", None, None, &[("cookie", &cookie)], "").await;
    assert!(is_problem(&by_cookie, StatusCode::UNAUTHORIZED), "{}", by_cookie.body);
    let anonymous = call(&env, "POST", "/actions/who", None, None, "{}").await;
    assert_eq!(anonymous.status, StatusCode::CREATED, "{}", anonymous.body);
    assert_eq!(anonymous.body["principal"], json!(null), "{}", anonymous.body);
}

jadpo_test_env::both!(
    user_credentials_to_an_app_without_users_are_refused,
    every_route_acts_for_its_principal_only,
    a_key_does_only_what_its_scopes_allow,
    a_user_acts_as_themself,
);
