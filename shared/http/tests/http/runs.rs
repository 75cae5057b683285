//! The workflow routes over HTTP: runs and Sessions for their owner, paged events, a start under
//! an `Idempotency-Key`, and the Session context's size limit.

use axum::http::StatusCode;
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};

use crate::common;

use common::calls::{call, is_problem, key};
use common::scoped_key;

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
        assert_eq!(got.body["parked"], Value::Null, "a run on a registered version is not parked");
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
        assert_eq!(events.body["events"][0]["actor"], json!("service:web"), "the start is web's");
        assert_eq!(events.body["next"], json!(null), "one page holds them all");
        // Paged: a full page names where the next starts; the last one ends with null.
        let first = call(&env, "GET", &format!("/runs/{run}/events?limit=2"), k, None, "").await;
        let page_seqs = |b: &serde_json::Value| -> Vec<u64> {
            b["events"]
                .as_array()
                .map(|a| a.iter().filter_map(|e| e["seq"].as_u64()).collect())
                .unwrap_or_default()
        };
        assert_eq!((page_seqs(&first.body), first.body["next"].clone()), (vec![1, 2], json!(2)));
        let rest =
            call(&env, "GET", &format!("/runs/{run}/events?after=2&limit=1000"), k, None, "").await;
        assert_eq!(page_seqs(&rest.body), (3..=revision).collect::<Vec<_>>(), "{}", rest.body);
        assert_eq!(rest.body["next"], json!(null));
        for bad in ["limit=0", "limit=5000", "after=abc", "after=-1", "page=2"] {
            let refused =
                call(&env, "GET", &format!("/runs/{run}/events?{bad}"), k, None, "").await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad}: {}", refused.body);
            assert_eq!(refused.body["title"], "Bad query", "{bad}: {}", refused.body);
        }
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
        let after = call(&env, "GET", &format!("/runs/{run}/events"), k, None, "").await;
        let actors: Vec<Value> = after.body["events"]
            .as_array()
            .map(|a| a.iter().map(|e| e["actor"].clone()).collect())
            .unwrap_or_default();
        assert_eq!(actors.last(), Some(&json!("service:web")), "the posted event is web's");
        assert!(actors.contains(&Value::Null), "steps' completions are the runtime's: {actors:?}");
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
        let patch =
            |rev: i64| format!(r#"{{"patch": {{"lang": "fr"}}, "expected_revision": {rev}}}"#);
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
            r#"{{"workflow": "checkout", "input": {{"order_id": "o-10"}}, "session_id": "{sid}"}}"#
        );
        let bound = call(&env, "POST", "/runs", k, None, &in_session).await;
        assert_eq!(bound.status, StatusCode::CREATED, "{}", bound.body);
        let view = call(&env, "GET", &format!("/sessions/{sid}"), k, None, "").await;
        assert_eq!(view.body["user_id"], json!("alice"), "{}", view.body);
        assert_eq!(view.body["active_run_id"], bound.body["run_id"]);
        assert_eq!(view.body["revision"], json!(2));
        // A second start while the Session's run goes on is refused and changes nothing, unless
        // it asks to re-bind the Session.
        let runs = env.count("main", "SELECT count(*) AS n FROM workflow_executions").await;
        let again = call(&env, "POST", "/runs", k, None, &in_session).await;
        assert!(is_problem(&again, StatusCode::CONFLICT), "{}", again.body);
        assert!(
            again.body["detail"].as_str().is_some_and(|d| d.contains("rebind")),
            "{}",
            again.body
        );
        let view = call(&env, "GET", &format!("/sessions/{sid}"), k, None, "").await;
        assert_eq!(
            (view.body["active_run_id"].clone(), view.body["revision"].clone()),
            (bound.body["run_id"].clone(), json!(2))
        );
        assert_eq!(env.count("main", "SELECT count(*) AS n FROM workflow_executions").await, runs);
        let rebind = format!(
            r#"{{"workflow": "checkout", "input": {{"order_id": "o-11"}}, "session_id": "{sid}", "rebind": true}}"#
        );
        let rebound = call(&env, "POST", "/runs", k, None, &rebind).await;
        assert_eq!(rebound.status, StatusCode::CREATED, "{}", rebound.body);
        let view = call(&env, "GET", &format!("/sessions/{sid}"), k, None, "").await;
        assert_eq!(
            (view.body["active_run_id"].clone(), view.body["revision"].clone()),
            (rebound.body["run_id"].clone(), json!(3))
        );
        let no_session = r#"{"workflow": "checkout", "input": {}, "session_id": "nope"}"#;
        let no_session = call(&env, "POST", "/runs", k, None, no_session).await;
        assert!(is_problem(&no_session, StatusCode::NOT_FOUND), "{}", no_session.body);
        let nobody = r#"{"context": {}}"#;
        let nobody = call(&env, "POST", "/sessions", k, None, nobody).await;
        assert!(is_problem(&nobody, StatusCode::BAD_REQUEST), "a service names the user");
        let bound_run = bound.body["run_id"].as_str().unwrap_or_default();
        let cancelled = call(&env, "POST", &format!("/runs/{bound_run}/cancel"), k, None, "").await;
        assert_eq!(cancelled.body["status"], "cancelling", "{}", cancelled.body);
    }
}

#[tokio::test]
async fn a_run_start_with_an_idempotency_key_happens_once() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let env = Env::shop(kind).await;
        let key = key(&env).await;
        let k = Some(key.as_str());
        let start = r#"{"workflow": "checkout", "input": {"order_id": "o-1"}}"#;
        let first = call(&env, "POST", "/runs", k, Some("start-1"), start).await;
        let second = call(&env, "POST", "/runs", k, Some("start-1"), start).await;
        assert_eq!((first.status, second.status), (StatusCode::CREATED, StatusCode::CREATED));
        assert_eq!(first.body, second.body, "{kind:?}: the retry answered another run");
        assert!(first.headers.get("idempotency-replayed").is_none());
        let replayed = second.headers.get("idempotency-replayed").and_then(|v| v.to_str().ok());
        assert_eq!(replayed, Some("true"), "{kind:?}");
        let runs = "SELECT count(*) AS n FROM workflow_executions";
        assert_eq!(env.count("main", runs).await, 1, "{kind:?}: a retry started a second run");
        // The same key for another start is refused, and starts nothing.
        let other = r#"{"workflow": "checkout", "input": {"order_id": "o-2"}}"#;
        let reused = call(&env, "POST", "/runs", k, Some("start-1"), other).await;
        assert!(is_problem(&reused, StatusCode::UNPROCESSABLE_ENTITY), "{}", reused.body);
        let bad = call(&env, "POST", "/runs", k, Some("bad key"), other).await;
        assert!(is_problem(&bad, StatusCode::BAD_REQUEST), "{}", bad.body);
        // Another caller's key of the same name is its own.
        let other_key = scoped_key(&env, "ops", &["*"], None).await;
        let theirs = call(&env, "POST", "/runs", Some(&other_key), Some("start-1"), start).await;
        assert_eq!(theirs.status, StatusCode::CREATED, "{}", theirs.body);
        assert_ne!(theirs.body["run_id"], first.body["run_id"]);
        assert!(theirs.headers.get("idempotency-replayed").is_none());
        assert_eq!(env.count("main", runs).await, 2, "{kind:?}");
        let nobody = call(&env, "POST", "/runs", None, Some("start-1"), start).await;
        assert!(is_problem(&nobody, StatusCode::UNAUTHORIZED), "{}", nobody.body);
    }
}

#[tokio::test]
async fn a_session_context_over_the_limit_is_refused_and_changes_nothing() {
    let env = Env::shop(Kind::Sqlite).await;
    let key = key(&env).await;
    let k = Some(key.as_str());
    let big = "x".repeat(jadpo_engine::workflow::session::CONTEXT_MAX_BYTES);
    let create = json!({"user_id": "alice", "context": {"blob": big}}).to_string();
    let refused = call(&env, "POST", "/sessions", k, None, &create).await;
    assert!(is_problem(&refused, StatusCode::PAYLOAD_TOO_LARGE), "{}", refused.body);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM sessions").await, 0);
    let small = json!({"user_id": "alice", "context": {"tenant": "t1"}}).to_string();
    let made = call(&env, "POST", "/sessions", k, None, &small).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let sid = made.body["id"].as_str().unwrap_or_default().to_owned();
    let patch = json!({"patch": {"blob": big}, "expected_revision": 0}).to_string();
    let path = format!("/sessions/{sid}/context");
    let too_big = call(&env, "PATCH", &path, k, None, &patch).await;
    assert!(is_problem(&too_big, StatusCode::PAYLOAD_TOO_LARGE), "{}", too_big.body);
    let view = call(&env, "GET", &format!("/sessions/{sid}"), k, None, "").await;
    assert_eq!(
        (view.body["context"].clone(), view.body["revision"].clone()),
        (json!({"tenant": "t1"}), json!(0)),
        "a refused patch changed the Session"
    );
}
