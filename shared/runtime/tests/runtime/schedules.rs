//! The shop's `sales_summary` schedule and housekeeping end to end on both adapters, through the
//! same entry points the `schedule-tick` and `housekeeping` functions call, with injected time.

use chrono::Duration;
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::Dispatched;
use jadpo_runtime::passes::{housekeeping_pass, tick_pass};
use jadpo_test_env::{Env, Kind, commit_and_enqueue, request, t0};
use serde_json::json;

async fn place_order(env: &Env) {
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
    commit_and_enqueue(env, request("place_order", body)).await;
}

const SUMMARIES: &str = "SELECT count(*) AS n FROM shop_sales_summaries WHERE orders = 1";

async fn the_sales_summary_runs_and_housekeeping_keeps_tables_bounded(kind: Kind) {
    let mut env = Env::shop(kind).await;
    env.clock.set(t0() + Duration::seconds(10));
    let first = tick_pass(&env.engine, "tick").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((first.created, first.runs.len()), (1, 0), "{first:?}");
    env.clock.set(t0() + Duration::seconds(20));
    place_order(&env).await;
    assert_eq!(env.drain().await.len(), 2);

    env.clock.set(t0() + Duration::seconds(61));
    let due = tick_pass(&env.engine, "tick").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.runs, ["sales_summary@2026-01-01T00:01:00.000Z"]);
    let delivered = env.drain().await;
    assert!(
        matches!(delivered.as_slice(), [Ok(Dispatched::Delivery(DeliveryResult::Handled))]),
        "{delivered:?}"
    );
    assert_eq!(env.count("main", SUMMARIES).await, 1, "the summary counted the order");
    let again = tick_pass(&env.engine, "other").await.unwrap_or_else(|e| panic!("{e}"));
    assert!(again.runs.is_empty(), "{again:?}");

    let fresh = housekeeping_pass(&env.engine, "hk").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fresh.len(), 2, "one report per store");
    assert!(fresh.iter().all(|r| r.stopped.is_none() && r.total_deleted() == 0), "{fresh:?}");

    // Fifteen days on: past every retention but the dead deliveries' and the schedule runs'.
    env.clock.advance(Duration::days(15));
    let reports = housekeeping_pass(&env.engine, "hk").await.unwrap_or_else(|e| panic!("{e}"));
    let main = reports.iter().find(|r| r.store == "main").unwrap_or_else(|| panic!("main"));
    let deleted = |class| main.deleted.iter().find(|(c, _)| *c == class).map_or(0, |(_, n)| *n);
    assert_eq!(deleted(RecordClass::FinishedDeliveries), 3, "{main:?}");
    assert_eq!(deleted(RecordClass::OutboxRows), 2, "{main:?}");
    assert_eq!(deleted(RecordClass::HandledDeliveries), 2, "{main:?}");
    assert_eq!(deleted(RecordClass::ScheduleRuns), 0, "{main:?}");
    let alerts: Vec<_> = main.alerts.iter().map(|a| (a.kind, a.item.as_str())).collect();
    assert_eq!(alerts, [("schedule.overdue", "sales_summary")]);
    let warehouse = reports.iter().find(|r| r.store == "warehouse").unwrap_or_else(|| panic!("w"));
    assert_eq!(warehouse.total_deleted(), 1, "{warehouse:?}");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_outbox").await, 0);
    assert_eq!(env.count("main", SUMMARIES).await, 1, "application data is never touched");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM shop_orders").await, 1);
    let quiet = housekeeping_pass(&env.engine, "hk").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(quiet.len(), 2, "one report per store");
    assert!(quiet.iter().all(|r| r.alerts.is_empty()), "an alert is raised once: {quiet:?}");
}

jadpo_test_env::both!(the_sales_summary_runs_and_housekeeping_keeps_tables_bounded);
