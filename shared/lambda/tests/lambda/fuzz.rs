//! Arbitrary SQS batches against the delivery function's handler (property-based, `proptest`):
//! bodies of any bytes, pointers of any shape (to no delivery, to another store, to a delivery
//! that exists), arbitrary message ids and attributes (`traceparent` among them). No batch
//! panics; an unreadable message comes back as a batch item failure and only a message of the
//! batch ever does; the one real order's deliveries take effect at most once however often
//! they come (one reservation, one receipt mailed).
//! `PROPTEST_CASES` sets the number of batches (300 here; `make fuzz` runs more).

use std::collections::{BTreeSet, HashMap};

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage, SqsMessageAttribute};
use jadpo_engine::commit::commit_unsent;
use jadpo_lambda::deliver_batch;
use jadpo_test_env::{Env, Kind, request};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

const RESERVED: &str = "SELECT coalesce(sum(qty), 0) AS n FROM shop_reservations";

fn body(real: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,200}",
        prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ("[a-z]{0,12}", ".{0,40}")
            .prop_map(|(store, id)| { json!({"store": store, "delivery_id": id}).to_string() }),
        ".{0,40}".prop_map(|id| json!({"store": "main", "delivery_id": id}).to_string()),
        ".{0,40}".prop_map(|id| json!({"store": "main", "run_id": id, "seq": 1}).to_string()),
        prop::sample::select(real)
            .prop_map(|id| json!({"store": "main", "delivery_id": id}).to_string()),
    ]
}

fn attribute() -> impl Strategy<Value = SqsMessageAttribute> {
    (prop::option::of(".{0,120}"), prop::option::of("[A-Za-z.]{0,12}")).prop_map(
        |(string_value, data_type)| {
            let mut attribute = SqsMessageAttribute::default();
            attribute.string_value = string_value;
            attribute.data_type = data_type;
            attribute
        },
    )
}

fn message(real: Vec<String>) -> impl Strategy<Value = SqsMessage> {
    let attributes = prop::collection::hash_map(
        prop_oneof![Just("traceparent".to_owned()), Just("tracestate".to_owned()), "[a-z]{1,8}"],
        attribute(),
        0..3,
    );
    // SQS gives every message an id.
    ("[a-z0-9-]{1,36}".prop_map(Some), body(real), attributes)
        .prop_map(|(message_id, body, attributes)| record(message_id, body, attributes))
}

/// An SQS record as the event source hands it over (the event types are non-exhaustive).
fn record(
    message_id: Option<String>,
    body: String,
    attributes: HashMap<String, SqsMessageAttribute>,
) -> SqsMessage {
    let mut record = SqsMessage::default();
    record.message_id = message_id;
    record.body = Some(body);
    record.message_attributes = attributes;
    record
}

fn event(records: Vec<SqsMessage>) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = records;
    event
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
}

#[test]
fn no_batch_panics_and_only_real_work_is_done_once() {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let env = rt.block_on(Env::shop(Kind::Sqlite));
    // One real order: its reservation and its receipt are the only real deliveries.
    let real: Vec<String> = rt.block_on(async {
        let order = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
        let outcome = commit_unsent(&env.engine, request("place_order", order)).await;
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        outcome.deliveries.iter().map(|d| d.id.clone()).collect()
    });
    assert_eq!(real.len(), 2, "{real:?}");
    let mut runner = TestRunner::new(Config { cases: cases(), ..Config::default() });
    let batches = prop::collection::vec(message(real), 1..11);
    let outcome = runner.run(&batches, |records| {
        let ids: BTreeSet<String> = records.iter().filter_map(|r| r.message_id.clone()).collect();
        let event = event(records);
        let (answer, reserved) = rt.block_on(async {
            let answer = deliver_batch(&env.engine, event, None).await;
            (answer, env.count("warehouse", RESERVED).await)
        });
        for failure in &answer.batch_item_failures {
            prop_assert!(
                ids.contains(&failure.item_identifier),
                "a failure names no message of the batch: {failure:?}"
            );
        }
        prop_assert!(reserved <= 1, "{reserved} reserved for one order of one item");
        let mailed = env.sinks.received("mailer").len();
        prop_assert!(mailed <= 1, "{mailed} receipts mailed for one order");
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // Some batch carried the real deliveries: the order took effect, once.
    assert_eq!(rt.block_on(env.count("warehouse", RESERVED)), 1, "the reservation never ran");
    assert_eq!(env.sinks.received("mailer").len(), 1, "the receipt was never mailed");
}

/// A garbled body is handed back to SQS (retried, then dead-lettered), never acknowledged.
#[test]
fn an_unreadable_message_is_a_batch_item_failure() {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let env = rt.block_on(Env::shop(Kind::Sqlite));
    let mut runner = TestRunner::new(Config { cases: cases(), ..Config::default() });
    let garbled = ("[a-z0-9]{1,20}", "[^{]{0,80}");
    let outcome = runner.run(&garbled, |(id, body)| {
        let record = record(Some(id.clone()), body, HashMap::new());
        let answer = rt.block_on(deliver_batch(&env.engine, event(vec![record]), None));
        let failed: Vec<_> =
            answer.batch_item_failures.iter().map(|f| &f.item_identifier).collect();
        prop_assert_eq!(failed, vec![&id]);
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
