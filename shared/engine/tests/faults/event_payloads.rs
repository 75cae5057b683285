//! `workflow_events.payload` holds the complete serialized event on both adapters; rows written
//! before it (the inner payload alone) read the same, and the upgrade rewrites them page by
//! page: crashed after its first page, run again, it finishes; every run reads exactly as before
//! and `verify` passes.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use jadpo_core::Dialect;
use jadpo_engine::workflow::events::upgrade_payloads;
use jadpo_engine::workflow::runs::start_run;
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::state::RuntimeEvent;
use serde_json::json;

/// Rows still holding the inner payload alone.
fn older_form(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => {
            "SELECT count(*) AS n FROM workflow_events WHERE NOT (json_type(payload) = 'object' \
             AND json_type(payload, '$.payload') IS NOT NULL \
             AND json_extract(payload, '$.seq') IS seq AND json_extract(payload, '$.type') IS type)"
        }
        Dialect::Postgres => {
            "SELECT count(*) AS n FROM workflow_events WHERE NOT (jsonb_typeof(payload) = 'object' \
             AND payload ? 'payload' AND payload -> 'seq' IS NOT DISTINCT FROM to_jsonb(seq) \
             AND payload -> 'type' IS NOT DISTINCT FROM to_jsonb(type))"
        }
    }
}

async fn events_of(env: &Env, runs: &[String]) -> Vec<Vec<RuntimeEvent>> {
    let store = env.store("main");
    let mut out = Vec::new();
    for run in runs {
        out.push(store.execution_events(run).await.unwrap_or_else(|e| panic!("{e}")));
    }
    out
}

async fn stored_whole_and_upgraded(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let mut runs = Vec::new();
    for n in 0..3 {
        let run =
            start_run(&env.engine, "checkout", json!({"order_id": format!("o{n}")}), None, None);
        runs.push(run.await.unwrap_or_else(|e| panic!("{e}")).run_id);
        env.drain().await;
    }
    let store = env.store("main").clone();
    let dialect = store.dialect();
    assert_eq!(
        env.count("main", older_form(dialect)).await,
        0,
        "{kind:?}: a new event is not whole"
    );
    let whole = events_of(&env, &runs).await;
    let rows = store
        .query_once("SELECT payload FROM workflow_events WHERE seq = 1 ORDER BY run_id", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first =
        rows.first().map(|r| r.get_json("payload")).transpose().unwrap_or_else(|e| panic!("{e}"));
    let first = first.unwrap_or_default();
    assert_eq!(
        (first["seq"].clone(), first["type"].clone()),
        (json!(1), json!("run.started")),
        "{first}"
    );
    assert_eq!(first["payload"]["workflow_id"], "checkout", "{first}");

    // The rows as an earlier release wrote them.
    let older = match dialect {
        Dialect::Sqlite => {
            "UPDATE workflow_events SET payload = json_extract(payload, '$.payload')"
        }
        Dialect::Postgres => "UPDATE workflow_events SET payload = payload -> 'payload'",
    };
    jadpo_test_harness::lift_history_guard(store.as_ref()).await.unwrap_or_else(|e| panic!("{e}"));
    store.execute_once(older, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let total = env.count("main", "SELECT count(*) AS n FROM workflow_events").await;
    assert_eq!(env.count("main", older_form(dialect)).await, total);
    assert_eq!(events_of(&env, &runs).await, whole, "{kind:?}: the older form reads differently");

    fail::cfg("events.after_upgrade_page", "1*return").unwrap_or_else(|e| panic!("{e}"));
    let crashed = upgrade_payloads(store.as_ref(), 4, |_| {}).await;
    fail::remove("events.after_upgrade_page");
    assert!(crashed.is_err(), "{kind:?}: the fault did not stop the upgrade");
    assert_eq!(
        env.count("main", older_form(dialect)).await,
        total - 4,
        "{kind:?}: one page committed"
    );
    assert_eq!(
        events_of(&env, &runs).await,
        whole,
        "{kind:?}: a half-upgraded log reads differently"
    );
    let done = upgrade_payloads(store.as_ref(), 4, |_| {}).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(i64::try_from(done.rewritten).ok(), Some(total - 4), "{kind:?}: {done:?}");
    assert_eq!(env.count("main", older_form(dialect)).await, 0, "{kind:?}");
    assert_eq!(events_of(&env, &runs).await, whole, "{kind:?}: the upgrade changed what is read");
    let again = upgrade_payloads(store.as_ref(), 4, |_| {}).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.rewritten, 0, "{kind:?}: a finished upgrade rewrote rows again");
    assert!(upgrade_payloads(store.as_ref(), 0, |_| {}).await.is_err(), "a zero batch was taken");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_stored_whole_and_older_rows_are_upgraded() {
    let _scenario = fail::FailScenario::setup();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        stored_whole_and_upgraded(kind).await;
    }
}
