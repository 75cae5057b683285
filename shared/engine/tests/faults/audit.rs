//! The shop's audited orders on both adapters: `place_order` writes its order with its own SQL,
//! and the trigger records the change with the caller, action, request and trace, in the same
//! transaction; the audit rows replay to the order's current state; an action that fails after
//! its write leaves no audit row.

use jadpo_core::model::audit::replay;
use jadpo_engine::commit::{CommitRequest, commit_unsent};
use jadpo_test_env::{Env, Kind};
use serde_json::json;

async fn an_orders_audit_trail_names_who_and_replays(kind: Kind) {
    // Held for the whole case: fault points are process-wide.
    let scenario = fail::FailScenario::setup();
    let env = Env::shop(kind).await;
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 2}]});
    let request = CommitRequest {
        caller: "web-shop".to_owned(),
        principal: Some(jadpo_core::model::principal::Principal::Service("web-shop".to_owned())),
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned()),
        request_id: "req-42".to_owned(),
        ..jadpo_test_env::request("place_order", body)
    };
    let out = commit_unsent(&env.engine, request).await.unwrap_or_else(|e| panic!("{e}"));
    let id = out.body["order_id"].as_str().unwrap_or_default().to_owned();
    let main = env.store("main");
    let rows = main.audit_rows("order", &id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!((r.kind.as_str(), r.actor.as_str()), ("insert", "service:web-shop"));
    assert_eq!(
        (r.action.as_deref(), r.request_id.as_deref()),
        (Some("place_order"), Some("req-42"))
    );
    assert_eq!(r.trace.as_deref(), Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    assert_eq!(r.changes["customer"]["after"], "c1");
    let spec = env.engine.app.audit_spec("order").cloned().unwrap_or_else(|| panic!("declared"));
    let current = main.audit_current(&spec, &id).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(current.is_some());
    assert_eq!(replay(&rows), Ok(current));
    // An action that fails after its write (here a crash just before the commit) leaves
    // nothing: neither its order nor the audit row the trigger wrote for it.
    fail::cfg("commit.before_commit", "1*return").unwrap_or_else(|e| panic!("{e}"));
    let failed = jadpo_test_env::request(
        "place_order",
        json!({"customer": "c2", "items": [{"sku": "B", "qty": 1}]}),
    );
    let failed = commit_unsent(&env.engine, failed).await;
    scenario.teardown();
    let error = failed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("fault injected at commit.before_commit"), "{error}");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM shop_orders").await, 1);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_audit").await, 1);
}

mod sqlite {
    #[tokio::test]
    async fn an_orders_audit_trail_names_who_and_replays() {
        super::an_orders_audit_trail_names_who_and_replays(super::Kind::Sqlite).await;
    }
}

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_orders_audit_trail_names_who_and_replays() {
        super::an_orders_audit_trail_names_who_and_replays(super::Kind::Postgres).await;
    }
}
