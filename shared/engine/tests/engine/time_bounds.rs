//! Spans past the calendar saturate instead of panicking, on both adapters. The configuration
//! refuses settings over 100 years, but an application declares some spans in code (an audited
//! entity's retention, a connection's key window) and an embedder builds `EngineSettings`
//! itself: with every retention and window at `Duration::MAX`, an idempotent commit still
//! commits (its record kept until the calendar ends) and a housekeeping pass deletes nothing and
//! hands nothing back. Before, `now - Duration::MAX` panicked both.

use std::time::Duration;

use jadpo_core::model::housekeeping::RecordClass;
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::housekeeping::{housekeep, housekeep_all};
use jadpo_engine::relay::enqueue_now;
use jadpo_test_env::{Env, Kind, request};
use serde_json::json;

async fn spans_past_the_calendar_keep_everything_and_panic_nothing(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let s = &mut env.engine.settings;
    s.idempotency_retention = Duration::MAX;
    s.redelivery_after = Duration::MAX;
    let h = &mut s.housekeeping;
    for span in [
        &mut h.handled_retention,
        &mut h.finished_retention,
        &mut h.dead_retention,
        &mut h.schedule_run_retention,
        &mut h.overdue_after,
        &mut h.step_record_retention,
        &mut h.unfinished_steps_after,
    ] {
        *span = Duration::MAX;
    }
    let mut order =
        request("place_order", json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]}));
    order.idempotency_key = Some("order-1".to_owned());
    let outcome =
        commit_unsent(&env.engine, order).await.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    env.drain().await;
    env.clock.advance(chrono::Duration::days(365 * 50));

    // Every retention past the calendar, an audited entity's too: nothing goes.
    let store = env.store("main");
    let settings = &env.engine.settings.housekeeping;
    let audit = [("order".to_owned(), Duration::MAX)];
    let pass = housekeep(store.as_ref(), env.clock.as_ref(), settings, Duration::MAX, &audit, "hk");
    let report = pass.await.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!((report.total_deleted(), report.rescued), (0, 0), "{kind:?}: {report:?}");

    // The shop's own audit retention is finite: fifty years on, only its audit row goes.
    let (reports, failures) = housekeep_all(&env.engine, "hk").await;
    assert!(failures.is_empty(), "{kind:?}: {failures:?}");
    assert!(!reports.is_empty(), "{kind:?}: no store was housekept");
    assert!(reports.iter().all(|r| r.stopped.is_none()), "{kind:?}: {reports:?}");
    let deleted = |audit: bool| -> u64 {
        let rows = reports.iter().flat_map(|r| r.deleted.iter());
        rows.filter(|(class, _)| (*class == RecordClass::AuditRows) == audit).map(|(_, n)| n).sum()
    };
    assert_eq!(
        deleted(false),
        0,
        "{kind:?}: a retention past the calendar keeps everything: {reports:?}"
    );
    assert_eq!(deleted(true), 1, "{kind:?}: the order's audit row, past the shop's retention");
}

jadpo_test_env::both!(spans_past_the_calendar_keep_everything_and_panic_nothing);
