//! Deliveries in batches, on both adapters: a subscriber's deliveries share one transaction
//! (counted at the batch's commit), each takes effect once, and a failing delivery, one that
//! wants to call out, a rejected one, one whose event this build cannot read and a message held
//! twice are each dealt with as if alone,
//! without their neighbours losing or repeating their effects.
//!
//! The batch's commit is counted through a fault point's callback (process-wide), so this
//! binary holds a single test that walks the cases in turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use jadpo_application::{
    Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::Dialect;
use jadpo_core::model::message::Pointer;
use jadpo_engine::EngineSettings;
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::{DispatchError, Dispatched};
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_env::{Emit, Env, Kind, commit_and_enqueue, request};
use serde_json::json;

const EFFECTS: &str = "CREATE TABLE t_effects (id TEXT PRIMARY KEY, note TEXT NOT NULL)";

/// Writes one row per ping; a ping asks it to fail, reject, or call out instead.
struct Effect;

#[async_trait]
impl Subscriber for Effect {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let id = event.payload["id"].as_str().unwrap_or_default().to_owned();
        match event.payload["then"].as_str() {
            Some("fail") => return Err(HandlerError::Failed(format!("{id} fails"))),
            Some("reject") => return Err(HandlerError::rejected(422, "Bad ping", id)),
            Some("call") => {
                ctx.call("nowhere", "/", json!({})).await?;
            }
            _ => {}
        }
        let sql = "INSERT INTO t_effects (id, note) VALUES ($1, $2)";
        ctx.tx().await?.execute(sql, &[id.as_str().into(), "done".into()]).await?;
        Ok(())
    }
}

fn app() -> Application {
    Application::builder("t")
        .store("main")
        .event("ping")
        .action("ping", "main", Emit("ping"))
        .subscriber("effect", "ping", "main", RetryPolicy::default(), Effect)
        .migrations(
            "main",
            Dialect::Sqlite,
            vec![Migration::new(Ledger::Workflow, 5, "t", EFFECTS)],
        )
        .migrations(
            "main",
            Dialect::Postgres,
            vec![Migration::new(Ledger::Workflow, 5, "t", EFFECTS)],
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn ping(env: &Env, id: &str, then: Option<&str>) {
    commit_and_enqueue(env, request("ping", json!({"id": id, "then": then}))).await;
}

/// `(status, attempts)` of the delivery of ping `id`.
async fn state(env: &Env, id: &str) -> (String, i64) {
    let sql = "SELECT d.status, d.attempts FROM jadpo_deliveries d JOIN jadpo_outbox o \
        ON o.id = d.outbox_id WHERE o.payload LIKE $1";
    let pattern = format!("%\"id\":\"{id}\"%");
    let rows = env.store("main").query_once(sql, &[pattern.into()]).await;
    let rows = rows.unwrap_or_else(|e| panic!("{e}"));
    let row = rows.first().unwrap_or_else(|| panic!("no delivery of {id}"));
    (row.get_str("status").unwrap_or_default().to_owned(), row.get_i64("attempts").unwrap_or(-1))
}

async fn effects(env: &Env) -> i64 {
    env.count("main", "SELECT count(*) AS n FROM t_effects").await
}

async fn cases(kind: Kind, commits: &Arc<AtomicUsize>) {
    // Six pings: one batch, one commit, six effects, each answered as handled.
    let mut env = Env::new(kind, app(), EngineSettings::default()).await;
    for i in 0..6 {
        ping(&env, &format!("a{i}"), None).await;
    }
    commits.store(0, Ordering::SeqCst);
    let results = env.drain_batched(16).await;
    assert_eq!(commits.load(Ordering::SeqCst), 1, "{kind:?}: six deliveries, one transaction");
    assert_eq!(results.len(), 6);
    assert!(
        results.iter().all(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Handled)))),
        "{kind:?}: {results:?}"
    );
    assert_eq!(effects(&env).await, 6, "{kind:?}");
    assert_eq!(state(&env, "a3").await, ("handled".to_owned(), 1));

    // One fails, one is rejected, one calls out: each is delivered alone and its attempt counted
    // once; the other three take effect in one batch.
    let mut env = Env::new(kind, app(), EngineSettings::default()).await;
    let plan = [("b0", None), ("b1", Some("fail")), ("b2", None), ("b3", Some("reject"))];
    for (id, then) in plan.into_iter().chain([("b4", Some("call")), ("b5", None)]) {
        ping(&env, id, then).await;
    }
    commits.store(0, Ordering::SeqCst);
    let results = env.drain_batched(16).await;
    assert_eq!(results.len(), 6, "{kind:?}: {results:?}");
    assert_eq!(commits.load(Ordering::SeqCst), 0, "{kind:?}: three shed, then the rest alone");
    assert_eq!(effects(&env).await, 3, "{kind:?}: b0, b2, b5");
    for id in ["b0", "b2", "b5"] {
        assert_eq!(state(&env, id).await, ("handled".to_owned(), 1), "{kind:?} {id}");
    }
    assert_eq!(state(&env, "b1").await, ("pending".to_owned(), 1), "{kind:?}: retried later");
    assert_eq!(state(&env, "b3").await, ("dead".to_owned(), 1), "{kind:?}: rejected");
    assert_eq!(
        state(&env, "b4").await,
        ("pending".to_owned(), 1),
        "{kind:?}: its call failed alone"
    );

    // One failure among five: shed once, the other four in one batch.
    let mut env = Env::new(kind, app(), EngineSettings::default()).await;
    for (i, then) in [None, None, Some("fail"), None, None].into_iter().enumerate() {
        ping(&env, &format!("c{i}"), then).await;
    }
    commits.store(0, Ordering::SeqCst);
    env.drain_batched(16).await;
    assert_eq!(commits.load(Ordering::SeqCst), 1, "{kind:?}: the survivors' batch committed");
    assert_eq!(effects(&env).await, 4, "{kind:?}");
    assert_eq!(state(&env, "c2").await, ("pending".to_owned(), 1), "{kind:?}");

    // The same message twice in one batch: one effect, both answered.
    let mut env = Env::new(kind, app(), EngineSettings::default()).await;
    ping(&env, "d0", None).await;
    ping(&env, "d1", None).await;
    let mut bodies = Vec::new();
    while let Ok(m) = env.rx.try_recv() {
        bodies.push(m.body);
    }
    bodies.push(bodies[0].clone());
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let results = jadpo_engine::dispatch::dispatch_many(&env.engine, &refs).await;
    assert_eq!(results.len(), refs.len(), "{kind:?}: one result per message");
    assert!(results.iter().all(Result::is_ok), "{kind:?}: {results:?}");
    assert!(
        matches!(results[2], Ok(Dispatched::Delivery(DeliveryResult::Finished(_)))),
        "{kind:?}: the second copy finds the first's work: {results:?}"
    );
    assert_eq!(effects(&env).await, 2, "{kind:?}");
    assert_eq!(state(&env, "d0").await, ("handled".to_owned(), 1), "{kind:?}");

    // A message naming no delivery, and one naming a store not configured, among good ones.
    let mut env = Env::new(kind, app(), EngineSettings::default()).await;
    ping(&env, "e0", None).await;
    ping(&env, "e1", None).await;
    let mut bodies: Vec<String> = Vec::new();
    while let Ok(m) = env.rx.try_recv() {
        bodies.push(m.body);
    }
    let gone = Pointer::Delivery { store: "main".to_owned(), delivery_id: "no-such".to_owned() };
    bodies.push(gone.to_body());
    let elsewhere = Pointer::Delivery { store: "other".to_owned(), delivery_id: "x".to_owned() };
    bodies.push(elsewhere.to_body());
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let results = jadpo_engine::dispatch::dispatch_many(&env.engine, &refs).await;
    assert!(results[0].is_ok() && results[1].is_ok(), "{kind:?}: {results:?}");
    assert!(
        matches!(results[2], Ok(Dispatched::Delivery(DeliveryResult::Gone))),
        "{kind:?}: {results:?} for {}",
        bodies[2]
    );
    assert!(
        matches!(results[3], Err(DispatchError::Malformed(_))),
        "{kind:?}: an unknown store: {results:?}"
    );
    assert_eq!(effects(&env).await, 2, "{kind:?}");

    // An event kept in an encoding this build does not read (a newer build wrote it): its
    // delivery fails alone, saying so; its neighbours take effect.
    let mut env = Env::new(kind, app(), EngineSettings::default()).await;
    for id in ["f0", "f1", "f2"] {
        ping(&env, id, None).await;
    }
    let sql = "UPDATE jadpo_outbox SET encoding = 99 WHERE payload LIKE '%\"f1\"%'";
    env.store("main").execute_once(sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    env.drain_batched(16).await;
    assert_eq!(effects(&env).await, 2, "{kind:?}: f0 and f2");
    assert_eq!(state(&env, "f1").await, ("pending".to_owned(), 1), "{kind:?}: retried later");
    let sql = "SELECT last_failure FROM jadpo_deliveries WHERE status = 'pending'";
    let rows = env.store("main").query_once(sql, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let failure = rows.first().and_then(|r| r.get_str("last_failure").ok()).unwrap_or_default();
    assert!(failure.contains("an event's payload is kept in encoding 99"), "{kind:?}: {failure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribers_deliveries_share_one_transaction_and_fail_alone() {
    let scenario = fail::FailScenario::setup();
    let commits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&commits);
    fail::cfg_callback("deliver.batch.before_commit", move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap_or_else(|e| panic!("{e}"));
    for kind in [Kind::Sqlite, Kind::Postgres] {
        cases(kind, &commits).await;
    }
    scenario.teardown();
}
