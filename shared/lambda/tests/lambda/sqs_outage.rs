//! The SQS API down for a while, on the deployed path (PostgreSQL, SQS through moto behind a
//! proxy the test cuts): orders still commit and are acknowledged; their deliveries wait in the
//! outbox, unstamped, through every relay pass the outage refuses; once SQS answers again one
//! relay pass sends every one of them, and the delivery batch takes effect once per order. Prints
//! the orders, the deliveries that waited and those relayed after, and what was lost (nothing).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::relay::enqueue_now;
use jadpo_lambda::deliver_batch;
use jadpo_queue_sqs::{SqsQueue, client_for_endpoint};
use jadpo_runtime::passes::relay_pass;
use jadpo_test_env::{Env, Kind, request};
use jadpo_test_harness::MotoServer;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};

const ORDERS: usize = 20;

/// A TCP proxy to `upstream` that, while `down` is set, closes every connection at once (as an
/// unreachable endpoint looks to a client); its port.
async fn proxy(upstream: u16, down: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            if down.load(Ordering::SeqCst) {
                continue; // dropped: the connection is closed
            }
            tokio::spawn(async move {
                if let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    port
}

async fn relay(env: &Env) -> jadpo_engine::relay::RelayReport {
    let deadline = Instant::now() + Duration::from_secs(10);
    let report = relay_pass(&env.engine, deadline).await;
    report.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_wait_in_the_outbox_while_sqs_is_down_and_are_relayed_after() {
    let moto = MotoServer::start();
    let direct = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    let created = direct.create_queue().queue_name("jadpo-deliveries").send().await;
    let url =
        created.unwrap_or_else(|e| panic!("{e:?}")).queue_url().unwrap_or_default().to_owned();
    let upstream: u16 =
        moto.endpoint().rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let down = Arc::new(AtomicBool::new(true));
    let port = proxy(upstream, Arc::clone(&down)).await;
    let through = client_for_endpoint(&format!("http://127.0.0.1:{port}"), "us-east-1", "t", "t");
    let mut env = Env::shop(Kind::Postgres).await;
    env.engine.queue = Arc::new(SqsQueue::new(through, &url));

    // SQS is down: every order still commits; its immediate send fails.
    let mut refused_at_commit = 0;
    for n in 0..ORDERS {
        let order = json!({"customer": format!("c{n}"), "items": [{"sku": "A", "qty": 1}]});
        let outcome = commit_unsent(&env.engine, request("place_order", order)).await;
        let outcome =
            outcome.unwrap_or_else(|e| panic!("order {n} was refused while SQS was down: {e}"));
        refused_at_commit +=
            enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await.failed;
    }
    assert_eq!(refused_at_commit, 2 * ORDERS, "every immediate send failed");
    let waiting = "SELECT count(*) AS n FROM jadpo_deliveries WHERE enqueued_at IS NULL AND status = 'pending'";
    for pass in 0..3 {
        env.clock.advance(chrono::Duration::seconds(10));
        let report = relay(&env).await;
        assert_eq!(report.sent, 0, "pass {pass} sent through a dead endpoint");
        assert!(report.failed > 0, "pass {pass} did not try");
        assert_eq!(env.count("main", waiting).await, 2 * ORDERS as i64, "pass {pass}");
    }

    // SQS is back: one pass sends everything that waited.
    down.store(false, Ordering::SeqCst);
    env.clock.advance(chrono::Duration::seconds(10));
    let report = relay(&env).await;
    assert_eq!((report.sent, report.failed), (2 * ORDERS, 0));
    assert_eq!(env.count("main", waiting).await, 0);

    let mut records = Vec::new();
    loop {
        let got = direct.receive_message().queue_url(&url).max_number_of_messages(10).send().await;
        let got = got.unwrap_or_else(|e| panic!("{e:?}"));
        if got.messages().is_empty() {
            break;
        }
        for m in got.messages() {
            let mut record = SqsMessage::default();
            record.message_id = m.message_id().map(str::to_owned);
            record.body = m.body().map(str::to_owned);
            records.push(record);
        }
    }
    let relayed = records.len();
    let mut event = SqsEvent::default();
    event.records = records;
    let answer = deliver_batch(&env.engine, event, None).await;
    assert!(answer.batch_item_failures.is_empty(), "{:?}", answer.batch_item_failures);
    let reserved = "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations";
    let reserved = env.count("warehouse", reserved).await;
    let unhandled = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status <> 'handled'";
    let unhandled = env.count("main", unhandled).await;
    println!(
        "SQS down: {ORDERS} orders committed and acknowledged, {} deliveries waited in the \
         outbox through 3 refused relay passes, {relayed} relayed after; reserved {reserved}, \
         unhandled {unhandled}, lost {}",
        2 * ORDERS,
        2 * ORDERS - relayed
    );
    assert_eq!(relayed, 2 * ORDERS, "a delivery never reached SQS");
    assert_eq!((reserved, unhandled), (ORDERS as i64, 0));
}
