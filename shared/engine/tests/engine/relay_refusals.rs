//! The relay when the queue refuses, on both adapters: a batch refused whole, and a batch of
//! which the queue refused some entries (SQS's partial batch failure). What was refused is
//! un-stamped, so the next pass sends exactly it again; what was accepted stays stamped and is
//! not sent twice.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::relay::{RelayReport, relay};
use jadpo_test_env::{Env, Kind, request};
use serde_json::json;

/// How the queue answers the next batch.
#[derive(Clone, Copy)]
enum Answer {
    Accept,
    /// The call fails as a whole (the queue unreachable).
    RefuseAll,
    /// Entries at even positions of the batch are refused.
    RefuseEven,
}

/// Records the deliveries it accepted; answers as it is told.
struct Picky {
    answer: Mutex<Answer>,
    accepted: Mutex<Vec<String>>,
}

impl Picky {
    fn new() -> Self {
        Self { answer: Mutex::new(Answer::Accept), accepted: Mutex::new(Vec::new()) }
    }

    fn answer(&self, answer: Answer) {
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = answer;
    }

    fn taken(&self) -> Vec<String> {
        std::mem::take(&mut *self.accepted.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The delivery a message points at.
fn delivery_of(message: &QueueMessage) -> String {
    let body: serde_json::Value =
        serde_json::from_str(&message.body).unwrap_or_else(|e| panic!("{e}: {}", message.body));
    body["delivery_id"].as_str().unwrap_or_else(|| panic!("{body}")).to_owned()
}

#[async_trait]
impl Queue for Picky {
    fn max_batch(&self) -> usize {
        10
    }

    async fn send_batch(&self, messages: &[QueueMessage]) -> Result<SendReport, QueueError> {
        let answer = *self.answer.lock().unwrap_or_else(|e| e.into_inner());
        let mut report = SendReport::default();
        for (i, message) in messages.iter().enumerate() {
            match answer {
                Answer::RefuseAll => return Err(QueueError::Unavailable("down".into())),
                Answer::RefuseEven if i % 2 == 0 => {
                    report.failed.push((message.id.clone(), "throttled".into()));
                }
                _ => self
                    .accepted
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(delivery_of(message)),
            }
        }
        Ok(report)
    }
}

async fn pass(env: &Env) -> RelayReport {
    let report = relay(&env.engine, Instant::now() + Duration::from_secs(5)).await;
    report.unwrap_or_else(|e| panic!("{e}"))
}

const STAMPED: &str = "SELECT count(*) AS n FROM jadpo_deliveries WHERE enqueued_at IS NOT NULL";

async fn refused_deliveries_are_unstamped_and_sent_again_alone(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let queue = Arc::new(Picky::new());
    env.engine.queue = Arc::clone(&queue) as Arc<dyn Queue>;
    for _ in 0..3 {
        let order = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
        commit_unsent(&env.engine, request("place_order", order))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // Past the relay's grace after a commit: all six deliveries are due.
    env.clock.advance(chrono::Duration::seconds(10));

    queue.answer(Answer::RefuseAll);
    let report = pass(&env).await;
    assert_eq!((report.sent, report.failed), (0, 6), "{kind:?}");
    assert_eq!(env.count("main", STAMPED).await, 0, "{kind:?}: a refused batch stays unstamped");

    queue.answer(Answer::RefuseEven);
    let report = pass(&env).await;
    assert_eq!((report.sent, report.failed), (3, 3), "{kind:?}");
    let first: BTreeSet<String> = queue.taken().into_iter().collect();
    assert_eq!(first.len(), 3, "{kind:?}");
    assert_eq!(env.count("main", STAMPED).await, 3, "{kind:?}: only what was accepted is stamped");

    queue.answer(Answer::Accept);
    let report = pass(&env).await;
    assert_eq!((report.sent, report.failed), (3, 0), "{kind:?}");
    let second: BTreeSet<String> = queue.taken().into_iter().collect();
    assert_eq!(second.len(), 3, "{kind:?}");
    assert!(first.is_disjoint(&second), "{kind:?}: an accepted delivery was sent twice");
    assert_eq!(env.count("main", STAMPED).await, 6, "{kind:?}");
    assert_eq!(pass(&env).await.sent, 0, "{kind:?}: nothing is left to send");
}

jadpo_test_env::both!(refused_deliveries_are_unstamped_and_sent_again_alone);
