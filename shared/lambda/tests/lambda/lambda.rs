//! The deployed path on PostgreSQL and the SQS API (moto), fed real Lambda event payloads:
//! API Gateway request → commit → relay → SQS → delivery batch → effects; a poisoned message
//! comes back as a batch item failure.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use jadpo_core::Clock;
use jadpo_core::model::delivery::{DeliveryFilter, DeliveryStatus};
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::operate::keys::issue_unrecorded;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_lambda::deliver_batch;
use jadpo_queue_sqs::{SqsQueue, client_for_endpoint};
use jadpo_runtime::passes::relay_pass;
use jadpo_test_env::{Env, Kind};
use jadpo_test_harness::MotoServer;
use serde_json::Value;
use tower::ServiceExt;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}"))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Receives every message on the queue, as the event source mapping would hand them over.
async fn receive_all(queue: &SqsQueue, url: &str) -> Vec<SqsMessage> {
    let template: SqsEvent =
        serde_json::from_str(&fixture("sqs_event.json")).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    loop {
        let received = queue
            .client()
            .await
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await;
        let received = received.unwrap_or_else(|e| panic!("{e:?}"));
        if received.messages().is_empty() {
            return out;
        }
        for m in received.messages() {
            let mut record = template.records[0].clone();
            record.message_id = m.message_id().map(str::to_owned);
            record.receipt_handle = m.receipt_handle().map(str::to_owned);
            record.body = m.body().map(str::to_owned);
            out.push(record);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_gateway_request_flows_through_sqs_to_its_subscribers() {
    let moto = MotoServer::start();
    let client = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    let created = client
        .create_queue()
        .queue_name("jadpo-deliveries")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let url = created.queue_url().unwrap_or_default().to_owned();
    let sqs = SqsQueue::new(client, &url);
    let mut env = Env::shop(Kind::Postgres).await;
    env.engine.queue = Arc::new(sqs.clone());
    let scopes = Scopes::all();
    let clock = env.engine.clock.as_ref();
    let key = issue_unrecorded(env.store("main").as_ref(), "web", None, &scopes, clock).await;
    let key = key.unwrap_or_else(|e| panic!("{e}")).secret;

    // API Gateway HTTP API v2 → lambda_http's request → the commit router.
    let raw = fixture("apigw_v2_place_order.json").replace("{{KEY}}", &key);
    let lambda_request: lambda_http::request::LambdaRequest =
        serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{e}"));
    let request: lambda_http::Request = lambda_request.into();
    let web = WebSettings { public_url: Some("https://shop.test".into()), secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    let response = router(state).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 201);

    // The queue's depth is what the relay reads to tell a backlog from a lost message.
    use jadpo_core::ports::Queue;
    assert_eq!(sqs.backlog().await.ok().flatten(), Some(2), "both messages counted");
    // The admission check's reading is reused for a second (one GetQueueAttributes a second per
    // instance, not one per request): still the one the commit made before its own send.
    assert_eq!(sqs.backlog_recent().await.ok().flatten(), Some(0), "the commit's reading");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(sqs.backlog_recent().await.ok().flatten(), Some(2), "read again after a second");

    // The immediate send put both deliveries on SQS; simulate their loss, then let the relay,
    // fired by the scheduled event, send them again.
    let lost = receive_all(&sqs, &url).await;
    assert_eq!(lost.len(), 2, "both deliveries were sent at once");
    for m in &lost {
        let handle = m.receipt_handle.clone().unwrap_or_default();
        let deleted = sqs.client().await.delete_message().queue_url(&url).receipt_handle(handle);
        deleted.send().await.unwrap_or_else(|e| panic!("{e:?}"));
    }
    assert_eq!(sqs.backlog().await.ok().flatten(), Some(0), "the queue lost both");
    let _: EventBridgeEvent<Value> = serde_json::from_str(&fixture("eventbridge_scheduled.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    env.clock.advance(chrono::Duration::minutes(16));
    let report = relay_pass(&env.engine, Instant::now() + Duration::from_secs(10)).await;
    assert_eq!(report.map(|r| r.sent).ok(), Some(2));

    let mut records = receive_all(&sqs, &url).await;
    assert_eq!(records.len(), 2);
    let duplicate = records[0].clone();
    records.push(duplicate); // SQS may deliver a message twice
    let mut poison = records[0].clone();
    poison.message_id = Some("poison-1".to_owned());
    poison.body = Some("this is not a delivery".to_owned());
    records.push(poison);
    let mut event = SqsEvent::default();
    event.records = records;
    // Too close to the invocation's deadline, nothing is started: every message goes back to
    // SQS untouched, with no attempt counted.
    let near = env.clock.now() + chrono::Duration::seconds(1);
    let late = deliver_batch(&env.engine, event.clone(), Some(near)).await;
    assert_eq!(late.batch_item_failures.len(), 4, "every message returned");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_handled_deliveries").await, 0);
    let attempted = "SELECT count(*) AS n FROM jadpo_deliveries WHERE attempts > 0";
    assert_eq!(env.count("main", attempted).await, 0);
    let response = deliver_batch(&env.engine, event, None).await;
    let failed: Vec<_> =
        response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
    assert_eq!(failed, vec!["poison-1".to_owned()], "only the poisoned message is retried");

    assert_eq!(env.count("main", "SELECT count(*) AS n FROM shop_orders").await, 1);
    assert_eq!(
        env.count("warehouse", "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations").await,
        3
    );
    assert_eq!(env.sinks.received("mailer").len(), 1);
    let all = DeliveryFilter { limit: 10, ..DeliveryFilter::default() };
    let deliveries =
        env.store("main").deliveries_list(&all).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !deliveries.is_empty() && deliveries.iter().all(|d| d.status == DeliveryStatus::Handled),
        "{deliveries:?}"
    );
}
