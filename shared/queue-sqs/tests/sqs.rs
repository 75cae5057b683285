//! The SQS adapter against the SQS API (moto): batches, attributes, partial failures, errors.

use std::collections::BTreeMap;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use jadpo_core::ports::{Queue, QueueError, QueueMessage};
use jadpo_queue_sqs::{SqsQueue, client_for_endpoint};
use jadpo_test_harness::MotoServer;

fn message(i: usize) -> QueueMessage {
    let mut attributes = BTreeMap::new();
    attributes.insert("traceparent".to_owned(), format!("00-{:032x}-{:016x}-01", i + 1, i + 1));
    QueueMessage {
        id: i.to_string(),
        body: format!("{{\"store\":\"main\",\"delivery_id\":\"d-{i}\"}}"),
        attributes,
    }
}

async fn queue(moto: &MotoServer, name: &str) -> SqsQueue {
    let client = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    let created =
        client.create_queue().queue_name(name).send().await.unwrap_or_else(|e| panic!("{e:?}"));
    SqsQueue::new(client, created.queue_url().unwrap_or_default())
}

#[tokio::test]
async fn batches_arrive_with_their_trace_context() {
    let moto = MotoServer::start();
    let q = queue(&moto, "deliveries").await;
    let batch: Vec<_> = (0..10).map(message).collect();
    let report = q.send_batch(&batch).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(report.failed.is_empty(), "{report:?}");
    let mut bodies = Vec::new();
    let url = q.client().await.get_queue_url().queue_name("deliveries").send().await.ok();
    let url = url.and_then(|o| o.queue_url().map(str::to_owned)).unwrap_or_default();
    while bodies.len() < 10 {
        let received = q
            .client()
            .await
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        for m in received.messages() {
            let tp = m
                .message_attributes()
                .and_then(|a| a.get("traceparent"))
                .and_then(|v| v.string_value());
            assert!(tp.is_some_and(|t| t.starts_with("00-")), "no traceparent on {m:?}");
            bodies.push(m.body().unwrap_or_default().to_owned());
        }
    }
    bodies.sort();
    let mut expected: Vec<_> = batch.iter().map(|m| m.body.clone()).collect();
    expected.sort();
    assert_eq!(bodies, expected);
}

#[tokio::test]
async fn oversized_batches_and_missing_queues_are_refused() {
    let moto = MotoServer::start();
    let q = queue(&moto, "deliveries").await;
    let eleven: Vec<_> = (0..11).map(message).collect();
    assert!(matches!(q.send_batch(&eleven).await, Err(QueueError::Refused(_))));
    let client = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    let missing = SqsQueue::new(client, &format!("{}/123456789012/nope", moto.endpoint()));
    let err = missing.send_batch(&[message(0)]).await.err();
    assert!(matches!(err, Some(QueueError::Refused(_))), "{err:?}");
    let unreachable = SqsQueue::new(
        client_for_endpoint("http://127.0.0.1:1", "us-east-1", "a", "b"),
        "http://127.0.0.1:1/1/q",
    );
    let err = unreachable.send_batch(&[message(0)]).await.err();
    assert!(matches!(err, Some(QueueError::Unavailable(_))), "{err:?}");
    assert!(SqsQueue::from_env("not-a-url").is_err());
}

/// SQS accepts part of a batch and refuses the rest per entry (throttled, invalid contents): the
/// adapter reports exactly the refused entries, with SQS's reason, so the relay un-stamps only
/// them. moto accepts every entry, so a stand-in endpoint answers as SQS does.
#[tokio::test]
async fn a_partly_refused_batch_reports_the_refused_entries() {
    use axum::http::header::CONTENT_TYPE;
    let answer = r#"{"Successful": [{"Id": "0", "MessageId": "m-0", "MD5OfMessageBody": "x"},
        {"Id": "2", "MessageId": "m-2", "MD5OfMessageBody": "x"}],
        "Failed": [{"Id": "1", "SenderFault": false, "Code": "ServiceUnavailable",
        "Message": "try again"}]}"#;
    let stand_in = axum::Router::new()
        .fallback(move || async move { ([(CONTENT_TYPE, "application/x-amz-json-1.0")], answer) });
    let listener =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move { axum::serve(listener, stand_in).await });
    let endpoint = format!("http://{addr}");
    let q = SqsQueue::new(
        client_for_endpoint(&endpoint, "us-east-1", "a", "b"),
        &format!("{endpoint}/123456789012/deliveries"),
    );
    let batch: Vec<_> = (0..3).map(message).collect();
    let report = q.send_batch(&batch).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.failed, [("1".to_owned(), "try again".to_owned())]);
}
