//! The event pipeline end to end on both adapters: commit → queue → delivery → effect.

use async_trait::async_trait;
use jadpo_application::{
    Action, ActionOutput, Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::model::delivery::{DeliveryFilter, DeliveryStatus};
use jadpo_engine::EngineSettings;
use jadpo_engine::commit::{CommitError, CommitRequest, commit_unsent};
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::{DispatchError, Dispatched};
use jadpo_engine::relay::enqueue_now;
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};

fn order_request(key: Option<&str>, body: Value) -> CommitRequest {
    let digest = jadpo_engine::commit::request_digest("POST", "/actions/place_order", &body);
    CommitRequest {
        action: "place_order".to_owned(),
        input: body,
        caller: "test".to_owned(),
        principal: None,
        idempotency_key: key.map(str::to_owned),
        request_digest: digest,
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned()),
        tracestate: None,
        request_id: "req-1".to_owned(),
    }
}

fn two_items() -> Value {
    json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]})
}

async fn place(
    env: &Env,
    key: Option<&str>,
    body: Value,
) -> Result<jadpo_engine::commit::CommitOutcome, CommitError> {
    let outcome = commit_unsent(&env.engine, order_request(key, body)).await?;
    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    Ok(outcome)
}

const ORDERS: &str = "SELECT count(*) AS n FROM shop_orders";
const RESERVATIONS: &str = "SELECT count(*) AS n FROM shop_reservations";

async fn an_order_flows_from_commit_to_the_warehouse(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let outcome = place(&env, None, two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.status, 201);
    assert!(outcome.body["order_id"].is_string());
    assert_eq!(outcome.deliveries.len(), 2, "two subscribers of order.placed");
    let results = env.drain().await;
    assert!(
        matches!(
            results.as_slice(),
            [
                Ok(Dispatched::Delivery(DeliveryResult::Handled)),
                Ok(Dispatched::Delivery(DeliveryResult::Handled))
            ]
        ),
        "{results:?}"
    );
    let mailed = env.sinks.received("mailer");
    assert_eq!(mailed.len(), 1);
    assert_eq!(mailed[0]["body"]["order_id"], outcome.body["order_id"]);
    assert_eq!(env.count("main", ORDERS).await, 1);
    assert_eq!(env.count("warehouse", RESERVATIONS).await, 2);
    assert_eq!(
        env.count("warehouse", "SELECT count(*) AS n FROM jadpo_handled_deliveries").await,
        1
    );
    // The event's payload is written in the form its encoding names: JSON text.
    let json_text = format!(
        "SELECT count(*) AS n FROM jadpo_outbox WHERE encoding = {}",
        jadpo_core::model::encoding::JSON_TEXT.number
    );
    let events = env.count("main", "SELECT count(*) AS n FROM jadpo_outbox").await;
    assert!(events > 0 && env.count("main", &json_text).await == events, "{events} events");
    let d = env.store("main").delivery_get(&outcome.deliveries[0].id).await.ok().flatten();
    let d = d.unwrap_or_else(|| panic!("delivery missing"));
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Handled, 1));
    assert_eq!(d.event.payload["order_id"], outcome.body["order_id"]);
    assert!(d.traceparent.is_some(), "trace context kept with the event");
}

async fn the_same_message_twice_has_one_effect(kind: Kind) {
    let mut env = Env::shop(kind).await;
    place(&env, None, two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    let mut messages = Vec::new();
    while let Ok(m) = env.rx.try_recv() {
        messages.push(m);
    }
    assert_eq!(messages.len(), 2);
    for m in &messages {
        let first = jadpo_engine::dispatch::dispatch(&env.engine, &m.body).await;
        let second = jadpo_engine::dispatch::dispatch(&env.engine, &m.body).await;
        assert!(matches!(first, Ok(Dispatched::Delivery(DeliveryResult::Handled))), "{first:?}");
        assert!(
            matches!(
                second,
                Ok(Dispatched::Delivery(DeliveryResult::Finished(DeliveryStatus::Handled)))
            ),
            "{second:?}"
        );
    }
    assert_eq!(env.count("warehouse", RESERVATIONS).await, 2);
    assert_eq!(env.sinks.received("mailer").len(), 1);
}

async fn a_lost_message_is_resent_by_the_relay(kind: Kind) {
    let mut env = Env::shop(kind).await;
    place(&env, None, two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    while env.rx.try_recv().is_ok() {} // the queue lost it
    env.settle().await;
    assert_eq!(env.count("warehouse", RESERVATIONS).await, 2);
}

async fn idempotent_requests_replay_and_refuse_reuse(kind: Kind) {
    let env = Env::shop(kind).await;
    let first = place(&env, Some("k-1"), two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    let again = place(&env, Some("k-1"), two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!first.replayed && again.replayed);
    assert_eq!(
        (again.status, &again.body),
        (first.status, &first.body),
        "the stored response, exactly"
    );
    assert!(again.deliveries.is_empty());
    let other = json!({"customer": "c2", "items": [{"sku": "A", "qty": 1}]});
    let reused = place(&env, Some("k-1"), other).await.err();
    assert!(matches!(reused, Some(CommitError::KeyReused(_))), "{reused:?}");
    assert_eq!(env.count("main", ORDERS).await, 1, "a replay or a refused reuse wrote an order");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_outbox").await, 1);
    env.clock.advance(chrono::Duration::hours(25));
    let after_expiry =
        place(&env, Some("k-1"), two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!after_expiry.replayed, "an expired key must run again");
}

async fn concurrent_requests_with_one_key_run_once(kind: Kind) {
    let env = Env::shop(kind).await;
    let (a, b) = tokio::join!(
        place(&env, Some("k-race"), two_items()),
        place(&env, Some("k-race"), two_items())
    );
    let outcomes: Vec<_> = [a, b].into_iter().collect();
    let ran = outcomes.iter().filter(|o| matches!(o, Ok(o) if !o.replayed)).count();
    assert_eq!(ran, 1, "{outcomes:?}");
    for o in &outcomes {
        match o {
            Ok(_) => {}
            Err(CommitError::Store(e)) if e.kind() == jadpo_core::StoreErrorKind::Conflict => {}
            Err(e) => panic!("unexpected: {e}"),
        }
    }
    assert_eq!(env.count("main", ORDERS).await, 1);
}

async fn a_rejected_action_writes_nothing(kind: Kind) {
    let env = Env::shop(kind).await;
    let bad = place(&env, Some("k-bad"), json!({"customer": "c1", "items": []})).await.err();
    assert!(matches!(bad, Some(CommitError::Rejected { status: 422, .. })), "{bad:?}");
    assert_eq!(env.count("main", ORDERS).await, 0);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_idempotency_keys").await, 0);
    let unknown = commit_unsent(
        &env.engine,
        CommitRequest { action: "nope".to_owned(), ..order_request(None, json!({})) },
    )
    .await;
    assert!(matches!(unknown, Err(CommitError::UnknownAction(_))));
}

async fn a_poison_message_is_an_infrastructure_error(kind: Kind) {
    let env = Env::shop(kind).await;
    for body in
        ["not json", "{\"store\": \"main\"}", "{\"store\": \"nowhere\", \"delivery_id\": \"x\"}"]
    {
        let result = jadpo_engine::dispatch::dispatch(&env.engine, body).await;
        assert!(matches!(result, Err(DispatchError::Malformed(_))), "{body}: {result:?}");
    }
    let gone = jadpo_engine::dispatch::dispatch(
        &env.engine,
        r#"{"store":"main","delivery_id":"missing"}"#,
    )
    .await;
    assert!(matches!(gone, Ok(Dispatched::Delivery(DeliveryResult::Gone))), "{gone:?}");
}

struct AlwaysFails;

#[async_trait]
impl Subscriber for AlwaysFails {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        Err(HandlerError::Failed("the mailer answered 503".to_owned()))
    }
}

struct Ping;

#[async_trait]
impl Action for Ping {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        _: Value,
    ) -> Result<ActionOutput, HandlerError> {
        ctx.emit("ping", json!({}));
        Ok(ActionOutput::ok(json!({})))
    }
}

struct Echo;

#[async_trait]
impl Subscriber for Echo {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        ctx.emit("ping", json!({"depth": event.chain_depth + 1}));
        Ok(())
    }
}

fn ping_request() -> CommitRequest {
    CommitRequest { action: "ping".to_owned(), ..order_request(None, json!({})) }
}

async fn a_failing_subscriber_ends_dead_with_its_attempts(kind: Kind) {
    let retry = RetryPolicy { max_attempts: 3, ..RetryPolicy::default() };
    let app = Application::builder("t")
        .store("main")
        .event("ping")
        .action("ping", "main", Ping)
        .subscriber("flaky", "ping", "main", retry, AlwaysFails)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut env = Env::new(kind, app, EngineSettings::default()).await;
    let outcome =
        commit_unsent(&env.engine, ping_request()).await.unwrap_or_else(|e| panic!("{e}"));
    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    env.settle().await;
    let d = env.store("main").delivery_get(&outcome.deliveries[0].id).await.ok().flatten();
    let d = d.unwrap_or_else(|| panic!("delivery missing"));
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Dead, 3));
    assert_eq!(d.last_failure.as_deref(), Some("the mailer answered 503"));
    let dead = DeliveryFilter { status: Some(DeliveryStatus::Dead), limit: 10, subscriber: None };
    assert_eq!(env.store("main").deliveries_list(&dead).await.map(|l| l.len()).ok(), Some(1));
}

/// An action that calls `mailer`.
struct Calls;

#[async_trait]
impl Action for Calls {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        _input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        ctx.call("mailer", "/x", json!({})).await?;
        Ok(ActionOutput::ok(json!({})))
    }
}

/// Only a handler declared to call may call: its store keeps step records; an action not
/// declared so is refused before anything is sent, saying what to declare, and its store
/// (which keeps no step records) is not touched.
async fn only_handlers_declared_to_call_make_calls(kind: Kind) {
    let app = Application::builder("t")
        .store("main")
        .store("side")
        .connection("mailer")
        .action("declared", "main", Calls)
        .calls("declared", &["mailer"])
        .action("undeclared", "side", Calls)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(app.feature_stores(jadpo_application::Feature::StepRecords), ["main"]);
    let env = Env::new(kind, app, EngineSettings::default()).await;
    let request = |action: &str| CommitRequest {
        action: action.to_owned(),
        request_id: format!("req-{action}"),
        ..order_request(None, json!({}))
    };
    let refused = commit_unsent(&env.engine, request("undeclared")).await;
    let said = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(said.contains(r#".calls("undeclared", &["mailer"])"#), "{kind:?}: {said}");
    assert!(env.sinks.received("mailer").is_empty(), "{kind:?}: nothing was sent");
    let made = commit_unsent(&env.engine, request("declared")).await;
    assert!(made.is_ok(), "{kind:?}: {made:?}");
    assert_eq!(env.sinks.received("mailer").len(), 1, "{kind:?}: the declared call was made");
}

/// A `ping` action and a subscriber echoing each ping, chains limited to depth 2.
async fn echo_env(kind: Kind) -> Env {
    let app = Application::builder("t")
        .store("main")
        .event("ping")
        .action("ping", "main", Ping)
        .subscriber("echo", "ping", "main", RetryPolicy::default(), Echo)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let settings = EngineSettings { max_chain_depth: 2, ..EngineSettings::default() };
    Env::new(kind, app, settings).await
}

async fn a_chain_deeper_than_the_limit_is_refused(kind: Kind) {
    let mut env = echo_env(kind).await;
    let outcome =
        commit_unsent(&env.engine, ping_request()).await.unwrap_or_else(|e| panic!("{e}"));
    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    env.settle().await;
    assert_eq!(
        env.count("main", "SELECT count(*) AS n FROM jadpo_outbox").await,
        3,
        "depths 0, 1 and 2"
    );
    let dead = DeliveryFilter { status: Some(DeliveryStatus::Dead), limit: 10, subscriber: None };
    let dead = env.store("main").deliveries_list(&dead).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dead.len(), 1);
    let failure = dead[0].last_failure.clone().unwrap_or_default();
    assert!(failure.contains("event chain depth 3 exceeds the limit of 2"), "{failure}");
    assert_eq!(dead[0].attempts, 1, "a refused chain is not retried");
}

/// The request's trace context (`traceparent` and `tracestate`) goes with every event down the
/// chain its subscribers emit.
async fn trace_context_follows_the_chain(kind: Kind) {
    let mut env = echo_env(kind).await;
    let traced =
        CommitRequest { tracestate: Some("vendor=abc,other=1".to_owned()), ..ping_request() };
    let outcome = commit_unsent(&env.engine, traced).await.unwrap_or_else(|e| panic!("{e}"));
    enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    env.settle().await;
    let traced = "SELECT count(*) AS n FROM jadpo_outbox WHERE tracestate = 'vendor=abc,other=1' \
                  AND traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'";
    assert_eq!(env.count("main", traced).await, 3, "depths 0, 1 and 2, each with the context");
}

async fn a_failing_connection_is_retried_until_it_recovers(kind: Kind) {
    let mut env = Env::shop(kind).await;
    env.sinks.set_failing("mailer", true);
    let outcome = place(&env, None, two_items()).await.unwrap_or_else(|e| panic!("{e}"));
    let results = env.drain().await;
    assert!(
        results.iter().any(|r| matches!(r, Ok(Dispatched::Delivery(DeliveryResult::Retrying)))),
        "{results:?}"
    );
    let receipt = outcome.deliveries.iter().map(|q| q.id.clone()).collect::<Vec<_>>();
    let filter = DeliveryFilter { subscriber: Some("send_receipt".into()), limit: 5, status: None };
    let failing =
        env.store("main").deliveries_list(&filter).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(failing.len(), 1);
    assert_eq!((failing[0].status, failing[0].attempts), (DeliveryStatus::Pending, 1));
    assert!(
        failing[0].last_failure.as_deref().unwrap_or_default().contains("answered 503"),
        "{failing:?}"
    );
    assert!(receipt.contains(&failing[0].id));
    env.sinks.set_failing("mailer", false);
    env.settle().await;
    let d = env
        .store("main")
        .delivery_get(&failing[0].id)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("gone"));
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Handled, 2));
    assert_eq!(env.sinks.received("mailer").len(), 1);
}

/// A pass whose deadline has already come (a nearly expired invocation, or an emulator that
/// reports none) still sends one batch per store, so every pass makes progress. A delivery just
/// committed is left to the send right after its commit for the relay's grace: a pass racing that
/// send would put a second message on the queue.
async fn a_relay_pass_at_its_deadline_still_sends_a_batch(kind: Kind) {
    let env = Env::shop(kind).await;
    commit_unsent(&env.engine, order_request(None, two_items()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let report = jadpo_engine::relay::relay(&env.engine, std::time::Instant::now()).await;
    assert_eq!(report.map(|r| r.sent).ok(), Some(0), "{kind:?}: within the grace");
    let grace = chrono::Duration::from_std(env.engine.settings.relay_grace).unwrap_or_default();
    env.clock.advance(grace);
    let report = jadpo_engine::relay::relay(&env.engine, std::time::Instant::now()).await;
    assert_eq!(report.map(|r| r.sent).ok(), Some(2), "{kind:?}: past the grace");
}

jadpo_test_env::both!(
    an_order_flows_from_commit_to_the_warehouse,
    the_same_message_twice_has_one_effect,
    a_lost_message_is_resent_by_the_relay,
    idempotent_requests_replay_and_refuse_reuse,
    concurrent_requests_with_one_key_run_once,
    a_rejected_action_writes_nothing,
    a_poison_message_is_an_infrastructure_error,
    a_failing_subscriber_ends_dead_with_its_attempts,
    a_chain_deeper_than_the_limit_is_refused,
    trace_context_follows_the_chain,
    a_failing_connection_is_retried_until_it_recovers,
    a_relay_pass_at_its_deadline_still_sends_a_batch,
    only_handlers_declared_to_call_make_calls,
);
