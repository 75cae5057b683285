//! Operators act through `jadpo` with a database role, never over HTTP (docs/security.md): no
//! route of the commit function reaches an operator verb, whoever calls it.

use crate::common;

use axum::http::StatusCode;
use common::{Req, scoped_key, send};
use jadpo_test_env::{Env, Kind};

const ORDER: &str = r#"{"customer": "c1", "items": [{"sku": "A", "qty": 1}]}"#;

/// Operators act through `jadpo` with a database role, never over HTTP: a key allowed every
/// scope finds no route to any operator verb (each answers 404 or 405), every route it can use
/// records no operator action, and nothing an operator governs changes.
async fn no_route_reaches_an_operator_verb(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let all = scoped_key(&env, "web", &["*"], None).await;
    let mine = Req { bearer: Some(&all), ..Req::default() };
    let placed = send(&env, "POST", "/actions/place_order", mine, ORDER).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.body);
    let start = r#"{"workflow": "checkout", "input": {"order_id": "o-1"}}"#;
    let run =
        send(&env, "POST", "/runs", Req { bearer: Some(&all), ..Req::default() }, start).await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let rid = run.body["run_id"].as_str().unwrap_or_default().to_owned();
    env.drain().await;
    let governed = [
        "SELECT count(*) AS n FROM jadpo_operator_actions",
        "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'handled'",
        "SELECT count(*) AS n FROM jadpo_circuit_breakers",
        "SELECT count(*) AS n FROM jadpo_flags",
        "SELECT count(*) AS n FROM jadpo_service_keys",
        "SELECT count(*) AS n FROM jadpo_migrations",
    ];
    let mut before = Vec::new();
    for sql in governed {
        before.push(env.count("main", sql).await);
    }
    let verbs = [
        "/deliveries",
        "/deliveries/retry",
        "/deliveries/discard",
        "/deliveries/release",
        "/breakers",
        "/breakers/mailer/open",
        "/flags",
        "/flags/checkout",
        "/schedules",
        "/schedules/sales_summary/pause",
        "/schedules/sales_summary/trigger",
        "/keys",
        "/tokens",
        "/migrate",
        "/migrations",
        "/audit",
        "/audit/erase",
        "/operator",
        "/operator-actions",
        "/export",
        "/import",
        "/console",
        "/runs/{rid}/discard",
        "/runs/{rid}/delete",
    ];
    for path in verbs {
        let path = path.replace("{rid}", &rid);
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            let answer =
                send(&env, method, &path, Req { bearer: Some(&all), ..Req::default() }, "{}").await;
            assert!(
                matches!(answer.status, StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED),
                "{method} {path} answered {} {}",
                answer.status,
                answer.body
            );
        }
    }
    let deleted = send(
        &env,
        "DELETE",
        &format!("/runs/{rid}"),
        Req { bearer: Some(&all), ..Req::default() },
        "",
    )
    .await;
    assert_eq!(deleted.status, StatusCode::METHOD_NOT_ALLOWED, "{}", deleted.body);
    for (sql, was) in governed.iter().zip(before) {
        assert_eq!(env.count("main", sql).await, was, "{sql} changed over HTTP");
    }
}

jadpo_test_env::both!(no_route_reaches_an_operator_verb);
