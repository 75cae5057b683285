//! Conformance cases for operator controls: delivery retry/discard/release, circuit breakers,
//! feature flags and the audit trail, with injected time.

use std::sync::Arc;

use chrono::Duration;
use jadpo_application::Application;
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_core::model::operator::ActionFilter;
use jadpo_core::{ManualClock, SqlValue};
use jadpo_engine::housekeeping::housekeep;
use jadpo_engine::operate::{NoOperator, Operator};

use crate::Fixture;
use crate::cases::{migrated, ok, race};
use crate::schedule_cases::{count, engine_on, exec, hk_settings, seed, t0};

/// Operators retry, discard and release deliveries; each change is recorded with the state
/// before it; handled deliveries cannot be retried, discarding is final (and ends a breaker's
/// hold), and refusals record nothing.
pub async fn delivery_operations_are_recorded_and_refused_when_final(fx: &dyn Fixture) {
    use jadpo_core::model::delivery::DeliveryStatus;
    use jadpo_engine::operate::deliveries::{DeliveryOpError, DeliveryOps};
    let store = migrated(fx).await;
    let now = t0() + Duration::days(1);
    seed(store.as_ref(), now).await;
    exec(
        store.as_ref(),
        "UPDATE jadpo_deliveries SET held_connection = 'mailer', held_at = $1 WHERE id = 'd6'",
        &[now.into()],
    )
    .await;
    let clock = Arc::new(ManualClock::new(now));
    let shop = Application::builder("ops")
        .store(store.name())
        .event("report.due")
        .connection("mailer")
        .build();
    let engine = engine_on(Arc::clone(&store), Arc::new(ok(shop, "app")), Arc::clone(&clock));
    assert_eq!(Operator::new(""), Err(NoOperator));
    let dora = ok(Operator::new("dora"), "operator").from_account("dora@ops-box");
    let ops = DeliveryOps::new(&engine, &dora);
    let before = ok(ops.retry("d5").await, "retry dead");
    assert_eq!(before.status, DeliveryStatus::Dead);
    let after = ok(store.delivery_get("d5").await, "get").unwrap_or_else(|| panic!("d5"));
    assert_eq!(
        (after.status, after.attempts, after.next_attempt_at),
        (DeliveryStatus::Pending, 0, now)
    );
    assert!(matches!(ops.retry("d3").await, Err(DeliveryOpError::Handled(_))));
    assert!(matches!(ops.discard("d3", "no").await, Err(DeliveryOpError::Handled(_))));
    assert!(matches!(ops.discard("d5", " ").await, Err(DeliveryOpError::NoReason)));
    clock.advance(Duration::seconds(1));
    // Held by the breaker when discarded: no longer shown as held once discarded.
    exec(
        store.as_ref(),
        "UPDATE jadpo_deliveries SET held_connection = 'mailer', held_at = $1 WHERE id = 'd5'",
        &[now.into()],
    )
    .await;
    ok(ops.discard("d5", "customer left").await, "discard");
    let gone = ok(store.delivery_get("d5").await, "get").unwrap_or_else(|| panic!("d5"));
    assert_eq!(gone.status, DeliveryStatus::Discarded);
    assert_eq!(gone.held, None, "a discarded delivery is held by no breaker");
    assert_eq!(gone.last_failure.as_deref(), Some("discarded by dora: customer left"));
    assert!(matches!(ops.retry("d5").await, Err(DeliveryOpError::Discarded(_))));
    assert!(matches!(ops.retry("nope").await, Err(DeliveryOpError::Unknown(_))));
    assert!(matches!(ops.release("fax").await, Err(DeliveryOpError::UnknownConnection(_))));
    clock.advance(Duration::seconds(1));
    let released = ok(ops.release("mailer").await, "release");
    assert_eq!(released, [(store.name().to_owned(), vec!["d6".to_owned()])]);
    let held = "SELECT COUNT(*) AS n FROM jadpo_deliveries WHERE held_connection IS NOT NULL";
    assert_eq!(count(store.as_ref(), held, &[]).await, 0);
    let all = ActionFilter { limit: 10, ..ActionFilter::default() };
    let actions = ok(store.operator_actions(&all).await, "actions");
    let seen: Vec<_> =
        actions.iter().map(|a| (a.action.as_str(), a.item.as_str(), a.operator.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("delivery.release", "mailer", "dora"),
            ("delivery.discard", "d5", "dora"),
            ("delivery.retry", "d5", "dora")
        ]
    );
    assert!(actions.iter().all(|a| !a.db_role.is_empty()), "every action names the database role");
    let accounts: Vec<_> = actions.iter().map(|a| a.os_account.as_deref()).collect();
    assert_eq!(accounts, [Some("dora@ops-box"); 3], "the account beside the name");
    let release: serde_json::Value = ok(serde_json::from_str(&actions[0].item_state), "json");
    assert_eq!(
        release["released"],
        serde_json::json!(["d6"]),
        "the release names what it released"
    );
    let retried: serde_json::Value = ok(serde_json::from_str(&actions[2].item_state), "json");
    assert_eq!(retried["status"], "dead", "the state recorded is the state before the change");
    assert_eq!(actions[1].detail.as_deref(), Some("customer left"));
    // Narrowed by operator, by time, by kind and item; each filter can leave nothing.
    let narrowed = |f: ActionFilter| {
        let s = Arc::clone(&store);
        async move {
            let found = ok(s.operator_actions(&f).await, "actions");
            found.iter().map(|a| a.action.clone()).collect::<Vec<_>>()
        }
    };
    let by = |who: &str| ActionFilter { operator: Some(who.into()), ..all.clone() };
    assert_eq!(narrowed(by("dora")).await.len(), 3);
    assert!(narrowed(by("eve")).await.is_empty(), "another operator's actions");
    let since = |t| ActionFilter { since: Some(t), ..all.clone() };
    let last = actions[0].acted_at;
    assert_eq!(narrowed(since(last)).await, ["delivery.release"], "at or after the last");
    assert!(narrowed(since(last + Duration::seconds(1))).await.is_empty(), "after the last");
    let on_d5 = ActionFilter { item_kind: Some("delivery".into()), item: Some("d5".into()), ..all };
    assert_eq!(narrowed(on_d5).await, ["delivery.discard", "delivery.retry"]);
}

/// 26 deliveries over two event types and two subscribers, created a second apart (the two
/// deliveries of an event at the same second): `dN-a` and `dN-b` for event `eN`. Every third
/// `-a` is dead with failure `f{N % 2}`, every fourth `-b` handled, the rest pending.
async fn page_seed(store: &dyn jadpo_core::Store) -> chrono::DateTime<chrono::Utc> {
    use jadpo_core::model::delivery::{NewDelivery, NewEvent};
    let start = t0();
    for n in 0..13_i64 {
        let at = start + Duration::seconds(n);
        let event = NewEvent {
            id: format!("e{n:02}"),
            event_type: if n % 2 == 0 { "order.placed" } else { "order.paid" }.into(),
            payload: serde_json::json!({"n": n}),
            traceparent: None,
            tracestate: None,
            chain_depth: 0,
            source: "test".into(),
            request_id: None,
            created_at: at,
        };
        let deliveries: Vec<NewDelivery> = ["a", "b"]
            .iter()
            .map(|s| NewDelivery {
                id: format!("d{n:02}-{s}"),
                outbox_id: event.id.clone(),
                subscriber: (*s).into(),
                created_at: at,
            })
            .collect();
        let mut tx = ok(store.begin().await, "begin");
        ok(store.outbox_append(tx.as_mut(), &event, &deliveries).await, "append");
        ok(tx.commit().await, "commit");
        if n % 3 == 0 {
            let sql = "UPDATE jadpo_deliveries SET status = 'dead', finished_at = $1, \
                       last_failure = $2 WHERE id = $3";
            let params = [at.into(), format!("f{}", n % 2).into(), format!("d{n:02}-a").into()];
            exec(store, sql, &params).await;
        }
        if n % 4 == 0 {
            let sql =
                "UPDATE jadpo_deliveries SET status = 'handled', finished_at = $1 WHERE id = $2";
            exec(store, sql, &[at.into(), format!("d{n:02}-b").into()]).await;
        }
    }
    start
}

/// Every page of `query`, following each page's last delivery; their ids in order.
async fn all_pages(
    store: &dyn jadpo_core::Store,
    mut query: jadpo_core::model::delivery::DeliveryQuery,
) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let page = ok(store.deliveries_page(&query).await, "page");
        assert!(page.len() <= query.limit as usize, "a page over its limit");
        let Some(last) = page.last() else { return ids };
        query.before = Some((last.created_at, last.id.clone()));
        ids.extend(page.into_iter().map(|d| d.id));
    }
}

/// The ids of `dNN-s` for which `keep(n, s)`, newest first (`-b` before `-a` within a second).
fn newest_first(keep: &dyn Fn(i64, &str) -> bool) -> Vec<String> {
    (0..13_i64)
        .rev()
        .flat_map(|n| ["b", "a"].map(|s| (n, s)))
        .filter(|(n, s)| keep(*n, s))
        .map(|(n, s)| format!("d{n:02}-{s}"))
        .collect()
}

/// Deliveries read a page at a time, newest first, each page from where the last ended: every
/// delivery once, in order, under each filter (status, subscriber, event type, creation times);
/// counts per status stop at their cap; dead deliveries grouped by subscriber and failure.
pub async fn delivery_pages_are_read_by_keyset_and_counts_are_capped(fx: &dyn Fixture) {
    use jadpo_core::model::delivery::{DeliveryQuery, DeliveryStatus};
    let (store, d) = (migrated(fx).await, fx.dialect());
    let start = page_seed(store.as_ref()).await;
    let dead = |n: i64, s: &str| s == "a" && n % 3 == 0;
    let query = DeliveryQuery { limit: 4, ..DeliveryQuery::default() };
    let all = all_pages(store.as_ref(), query.clone()).await;
    assert_eq!(all, newest_first(&|_, _| true), "{d}: every delivery once, newest first");
    let only_dead = DeliveryQuery { status: Some(DeliveryStatus::Dead), limit: 2, ..query.clone() };
    assert_eq!(all_pages(store.as_ref(), only_dead).await, newest_first(&dead), "{d}");
    let b_paid = DeliveryQuery {
        subscriber: Some("b".into()),
        event_type: Some("order.paid".into()),
        ..query.clone()
    };
    let expected = newest_first(&|n, s| s == "b" && n % 2 == 1);
    assert_eq!(all_pages(store.as_ref(), b_paid).await, expected, "{d}");
    let window = DeliveryQuery {
        created_from: Some(start + Duration::seconds(3)),
        created_to: Some(start + Duration::seconds(6)),
        status: Some(DeliveryStatus::Pending),
        ..query.clone()
    };
    let pending = |n: i64, s: &str| !(dead(n, s) || s == "b" && n % 4 == 0);
    let expected = newest_first(&|n, s| (3..6).contains(&n) && pending(n, s));
    assert_eq!(all_pages(store.as_ref(), window).await, expected, "{d}");
    // Two pending deliveries held by the mailer's breaker: found by the connection.
    let until = start + Duration::hours(1);
    let mut tx = ok(store.begin().await, "begin");
    for id in ["d01-a", "d02-b"] {
        let held = store.delivery_hold(tx.as_mut(), id, "mailer", start, until).await;
        assert!(ok(held, "hold"), "{d}: {id} held");
    }
    ok(tx.commit().await, "commit");
    let held = DeliveryQuery { held_by: Some("mailer".into()), ..query.clone() };
    assert_eq!(all_pages(store.as_ref(), held.clone()).await, ["d02-b", "d01-a"], "{d}");
    let held_pending = DeliveryQuery { status: Some(DeliveryStatus::Pending), ..held };
    assert_eq!(all_pages(store.as_ref(), held_pending).await, ["d02-b", "d01-a"], "{d}");
    let other = DeliveryQuery { held_by: Some("payments".into()), ..query.clone() };
    assert!(all_pages(store.as_ref(), other).await.is_empty(), "{d}");
    let unknown = DeliveryQuery { subscriber: Some("nobody".into()), ..query };
    assert!(all_pages(store.as_ref(), unknown).await.is_empty(), "{d}");

    let summary = ok(store.deliveries_summary(start + Duration::seconds(6), 1000).await, "sum");
    let count_of = |status| summary.counts.iter().find(|(s, _)| *s == status).map(|(_, n)| *n);
    assert_eq!(count_of(DeliveryStatus::Dead), Some(5), "{d}");
    assert_eq!(count_of(DeliveryStatus::Handled), Some(4), "{d}");
    assert_eq!(count_of(DeliveryStatus::Pending), Some(17), "{d}");
    assert_eq!(count_of(DeliveryStatus::Discarded), Some(0), "{d}");
    assert_eq!(summary.dead_since, 3, "{d}: d06, d09 and d12 died at or after +6 s");
    let oldest = Some(start + Duration::seconds(1));
    assert_eq!(summary.oldest_pending, oldest, "{d}: d00-a died and d00-b was handled");
    let capped = ok(store.deliveries_summary(start, 3).await, "capped");
    assert!(capped.counts.iter().all(|(_, n)| *n <= 3), "{d}: {:?}", capped.counts);
    assert_eq!((capped.cap, capped.dead_since), (3, 3), "{d}");

    let groups = ok(store.dead_groups(10, 100).await, "groups");
    let seen: Vec<(String, Option<String>, u64)> =
        groups.iter().map(|g| (g.subscriber.clone(), g.failure.clone(), g.count)).collect();
    let group = |f: &str, n| ("a".to_owned(), Some(f.to_owned()), n);
    assert_eq!(seen, [group("f0", 3), group("f1", 2)], "{d}: d00, d06, d12 f0; d03, d09 f1");
    assert_eq!(groups[0].newest, Some(start + Duration::seconds(12)), "{d}");
    assert_eq!(ok(store.dead_groups(1, 100).await, "one group").len(), 1, "{d}");
    let newest_two = ok(store.dead_groups(10, 2).await, "the newest two");
    let seen: Vec<_> = newest_two.iter().map(|g| (g.failure.clone(), g.count)).collect();
    assert_eq!(seen, [(Some("f0".into()), 1), (Some("f1".into()), 1)], "{d}: d12 f0, d09 f1");
}

/// Circuit breakers under concurrent deliveries: a run of connection failures opens it; held
/// deliveries record their connection; after the pause exactly one of several deliveries racing
/// on their own connections and threads becomes the probe; the probe's success closes it and releases the held deliveries
/// once; an alert is raised once for a breaker open too long.
pub async fn breakers_let_one_probe_through_and_release_held_deliveries_once(fx: &dyn Fixture) {
    use jadpo_core::model::breaker::{AttemptResult, BreakerPolicy, Gate, State, Transition};
    use jadpo_engine::breaker::{admit, settle};
    let store = migrated(fx).await;
    let outbox = "INSERT INTO jadpo_outbox (id, event_type, payload, chain_depth, source, created_at) \
        VALUES ('e1', 'report.due', '{}', 0, 'seed', $1)";
    exec(store.as_ref(), outbox, &[t0().into()]).await;
    for id in ["d1", "d2", "d3", "d4"] {
        let sql = "INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, next_attempt_at, created_at) \
            VALUES ($1, 'e1', $2, $3, $3)";
        exec(store.as_ref(), sql, &[id.into(), format!("s_{id}").into(), t0().into()]).await;
    }
    let policy = BreakerPolicy {
        failures_to_open: 2,
        first_pause: std::time::Duration::from_secs(10),
        alert_after: std::time::Duration::from_secs(60),
        ..BreakerPolicy::default()
    };
    let s = store.as_ref();
    let fail = AttemptResult::ConnectionFailed;
    assert_eq!(
        ok(settle(s, ("mailer", "d0"), fail, None, t0(), &policy).await, "settle").0,
        Transition::None
    );
    assert_eq!(
        ok(settle(s, ("mailer", "d0"), fail, None, t0(), &policy).await, "settle").0,
        Transition::Opened
    );
    let soon = t0() + Duration::seconds(5);
    for id in ["d1", "d2"] {
        let (gate, _) = ok(admit(s, "mailer", id, soon, &policy).await, "admit");
        assert_eq!(gate, Gate::Hold { until: t0() + Duration::seconds(10) });
    }
    let held = "SELECT COUNT(*) AS n FROM jadpo_deliveries WHERE held_connection = 'mailer' AND held_at IS NOT NULL";
    assert_eq!(count(s, held, &[]).await, 2);
    let later = t0() + Duration::seconds(11);
    // Three deliveries at once, each on its own connection and thread, released together.
    let ids = ["d2", "d3", "d4"];
    let gates = race(vec![fx.open(), fx.open(), fx.open()], |i, s| async move {
        ok(admit(s.as_ref(), "mailer", ids[i], later, &policy).await, ids[i]).0
    })
    .await;
    let probes: Vec<_> = gates.iter().filter(|g| **g == Gate::Probe).collect();
    assert_eq!(probes.len(), 1, "exactly one probe at a time: {gates:?}");
    let probe = ["d2", "d3", "d4"][gates.iter().position(|g| *g == Gate::Probe).unwrap_or(0)];
    assert_eq!(count(s, held, &[]).await, 3, "the others are held");
    let breakers = ok(s.breakers_list().await, "list");
    assert_eq!(
        breakers.first().map(|b| (b.state, b.probe_delivery.as_deref())),
        Some((State::HalfOpen, Some(probe)))
    );
    let (t, released) = ok(
        settle(s, ("mailer", probe), AttemptResult::Success, None, later, &policy).await,
        "close",
    );
    assert_eq!((t, released), (Transition::Closed, 3));
    assert_eq!(count(s, held, &[]).await, 0);
    let (_, again) = ok(
        settle(s, ("mailer", probe), AttemptResult::Success, None, later, &policy).await,
        "again",
    );
    assert_eq!(again, 0, "held deliveries are released once");
    let due = "SELECT COUNT(*) AS n FROM jadpo_deliveries WHERE next_attempt_at = $1 AND enqueued_at IS NULL";
    assert_eq!(count(s, due, &[later.into()]).await, 3, "released deliveries are due at once");
    // Open again and stay open past the alert threshold: housekeeping raises the alert once.
    ok(settle(s, ("mailer", "d9"), fail, None, later, &policy).await, "settle");
    ok(settle(s, ("mailer", "d9"), fail, None, later, &policy).await, "settle");
    let clock = ManualClock::new(later + Duration::seconds(61));
    let rescue_after = std::time::Duration::from_secs(900);
    let first = ok(housekeep(s, &clock, &hk_settings(), rescue_after, &[], "hk").await, "pass");
    let raised: Vec<_> = first.alerts.iter().map(|a| (a.kind, a.item.as_str())).collect();
    assert_eq!(raised, [("breaker.open", "mailer")]);
    let second = ok(housekeep(s, &clock, &hk_settings(), rescue_after, &[], "hk").await, "pass");
    assert!(second.alerts.is_empty(), "{second:?}");
}

/// Flags: every change is recorded with who made it and the database role; setting the state a
/// flag already has records nothing; an undeclared flag is refused.
pub async fn flag_changes_are_recorded_with_who_made_them(fx: &dyn Fixture) {
    use jadpo_core::model::flags::Rollout;
    use jadpo_engine::operate::flags::{FlagOpError, FlagOps};
    let store = migrated(fx).await;
    let clock = Arc::new(ManualClock::new(t0()));
    let declared = Application::builder("flags")
        .store(store.name())
        .event("report.due")
        .flag("beta", Rollout::Off)
        .flag("dark_mode", Rollout::On)
        .build();
    let engine = engine_on(Arc::clone(&store), Arc::new(ok(declared, "app")), Arc::clone(&clock));
    let fay = ok(Operator::new("fay"), "operator");
    let ops = FlagOps::new(&engine);
    let listed = ok(ops.list().await, "list");
    let states: Vec<_> = listed.iter().map(|(n, r, s)| (n.as_str(), *r, s.is_none())).collect();
    assert_eq!(states, [("beta", Rollout::Off, true), ("dark_mode", Rollout::On, true)]);
    assert!(
        ok(ops.set("beta", Rollout::Off, &fay).await, "same").is_none(),
        "no change, no record"
    );
    let first = ok(ops.set("beta", Rollout::Percent(25), &fay).await, "set")
        .unwrap_or_else(|| panic!("changed"));
    assert_eq!(
        (first.before.as_str(), first.after.as_str(), first.operator.as_str()),
        ("off", "25%", "fay")
    );
    assert!(!first.db_role.is_empty());
    clock.advance(Duration::seconds(1));
    ok(ops.set("beta", Rollout::On, &fay).await, "set");
    let history = ok(ops.history("beta", 10).await, "history");
    let steps: Vec<_> = history.iter().map(|c| (c.before.as_str(), c.after.as_str())).collect();
    assert_eq!(steps, [("25%", "on"), ("off", "25%")]);
    assert!(matches!(ops.set("gamma", Rollout::On, &fay).await, Err(FlagOpError::Unknown { .. })));
    let stored = ok(store.flag_read(jadpo_core::On::Own, "beta").await, "read")
        .map(|f| (f.rollout, f.updated_by));
    assert_eq!(stored, Some((Rollout::On, "fay".to_owned())));
}

/// The audit trail: triggers record insert, update and delete made by raw SQL in the same
/// transaction, with who, action, request and trace from the transaction's context; the rows
/// replay to the record's current state; a change outside the runtime is recorded as such;
/// erasure removes the record with its rows; retention deletes old rows.
pub async fn audit_rows_record_raw_sql_changes_and_replay(fx: &dyn Fixture) {
    use jadpo_core::model::audit::{AuditContext, AuditSpec, replay};
    use jadpo_engine::audit;
    let store = migrated(fx).await;
    let s = store.as_ref();
    let ddl = match fx.dialect() {
        jadpo_core::Dialect::Postgres => {
            "CREATE TABLE things (id TEXT PRIMARY KEY, name TEXT, qty INTEGER, tags JSONB)"
        }
        jadpo_core::Dialect::Sqlite => {
            "CREATE TABLE things (id TEXT PRIMARY KEY NOT NULL, name TEXT, qty INTEGER, tags TEXT)"
        }
    };
    let mut tx = ok(s.begin().await, "begin");
    ok(tx.batch(ddl).await, "table");
    ok(tx.commit().await, "commit");
    let spec = AuditSpec::new("thing", s.name(), "things", &["name", "qty", "tags"]);
    ok(audit::ensure_triggers(s, &[&spec]).await, "triggers");
    ok(audit::ensure_triggers(s, &[&spec]).await, "triggers again (idempotent)");
    let tags = |v: &str| match fx.dialect() {
        jadpo_core::Dialect::Postgres => SqlValue::Json(serde_json::json!([v])),
        jadpo_core::Dialect::Sqlite => SqlValue::Text(serde_json::json!([v]).to_string()),
    };
    let write = |sql: &'static str, params: Vec<SqlValue>, request: &'static str| {
        let store = Arc::clone(&store);
        async move {
            let mut tx = ok(store.begin().await, "begin");
            let who = AuditContext {
                actor: "web",
                action: "rename_thing",
                request_id: Some(request),
                trace: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
                now: t0(),
            };
            ok(store.audit_set_context(tx.as_mut(), &who).await, "context");
            ok(tx.execute(sql, &params).await, sql);
            ok(store.audit_clear_context(tx.as_mut()).await, "clear");
            ok(tx.commit().await, "commit");
        }
    };
    write(
        "INSERT INTO things (id, name, qty, tags) VALUES ($1, $2, $3, $4)",
        vec!["t1".into(), "bolt".into(), 3_i64.into(), tags("a")],
        "r1",
    )
    .await;
    write(
        "UPDATE things SET name = $2, qty = $3 WHERE id = $1",
        vec!["t1".into(), "it's a bolt".into(), SqlValue::Null],
        "r2",
    )
    .await;
    write("UPDATE things SET name = name WHERE id = $1", vec!["t1".into()], "r3").await;
    // A rolled-back change leaves no audit row.
    let mut tx = ok(s.begin().await, "begin");
    ok(tx.execute("UPDATE things SET qty = 99 WHERE id = 't1'", &[]).await, "update");
    ok(tx.rollback().await, "rollback");
    // A change outside the runtime (no context) is recorded as such.
    exec(s, "UPDATE things SET tags = $1 WHERE id = 't1'", &[tags("b")]).await;
    let rows = ok(s.audit_rows("thing", "t1").await, "rows");
    let kinds: Vec<_> = rows.iter().map(|r| (r.seq, r.kind.as_str())).collect();
    assert_eq!(kinds, [(1, "insert"), (2, "update"), (3, "update")], "{rows:#?}");
    assert_eq!(
        (rows[0].actor.as_str(), rows[0].action.as_deref(), rows[0].request_id.as_deref()),
        ("web", Some("rename_thing"), Some("r1"))
    );
    assert!(rows[0].trace.as_deref().is_some_and(|t| t.starts_with("00-0af7")));
    assert_eq!(rows[0].changed_at, t0());
    assert_eq!(
        rows[1].changes["name"],
        serde_json::json!({"before": "bolt", "after": "it's a bolt"})
    );
    assert_eq!(rows[1].changes["qty"], serde_json::json!({"before": "3", "after": null}));
    assert!(rows[1].changes.get("tags").is_none(), "unchanged fields are not recorded");
    assert!(rows[2].actor.starts_with("outside the runtime"), "{}", rows[2].actor);
    let current = ok(s.audit_current(&spec, "t1").await, "current");
    assert_eq!(replay(&rows), Ok(current.clone()), "the rows replay to the record's current state");
    assert!(current.is_some());
    // Delete, then erase another record with its rows.
    write("DELETE FROM things WHERE id = $1", vec!["t1".into()], "r4").await;
    let rows = ok(s.audit_rows("thing", "t1").await, "rows");
    assert_eq!(rows.last().map(|r| r.kind.as_str()), Some("delete"));
    assert_eq!(replay(&rows), Ok(None));
    write(
        "INSERT INTO things (id, name, qty, tags) VALUES ($1, $2, $3, $4)",
        vec!["t2".into(), "nut".into(), 1_i64.into(), tags("c")],
        "r5",
    )
    .await;
    let erased = ok(audit::erase(s, &spec, "t2").await, "erase");
    assert_eq!(erased, 2, "the insert and the erasing delete");
    assert!(ok(s.audit_rows("thing", "t2").await, "rows").is_empty());
    assert!(ok(s.audit_current(&spec, "t2").await, "current").is_none());
    assert!(matches!(audit::erase(s, &spec, "t2").await, Err(audit::AuditError::NoRecord { .. })));
    // Retention: t1's rows (at t0 and now) — those older than a day go.
    let clock = ManualClock::new(t0() + Duration::days(2));
    let keep = [("thing".to_owned(), std::time::Duration::from_secs(86_400))];
    let report = ok(
        housekeep(s, &clock, &hk_settings(), std::time::Duration::from_secs(900), &keep, "hk")
            .await,
        "pass",
    );
    let deleted =
        report.deleted.iter().find(|(c, _)| *c == RecordClass::AuditRows).map_or(0, |(_, n)| *n);
    assert_eq!(deleted, 3, "the three rows written at t0 by the runtime: {report:?}");
}
