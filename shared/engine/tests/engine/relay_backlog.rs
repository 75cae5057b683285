//! The relay under a backlog, on both adapters: deliveries sent long ago and unfinished are
//! re-sent only as far as the queue's depth cannot account for them — all of them when the queue
//! is empty or cannot tell, none while it holds as many messages as there are such deliveries.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::housekeeping::housekeep_all;
use jadpo_engine::relay::{RelayReport, enqueue_now, relay};
use jadpo_test_env::{Env, Kind, request};
use serde_json::json;

/// Keeps what it is sent and reports the depth it is told to.
#[derive(Default)]
struct Deep {
    sent: Mutex<Vec<QueueMessage>>,
    depth: Mutex<Option<u64>>,
}

impl Deep {
    fn set_depth(&self, depth: Option<u64>) {
        *self.depth.lock().unwrap_or_else(|e| e.into_inner()) = depth;
    }

    fn taken(&self) -> usize {
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(|e| e.into_inner())).len()
    }
}

#[async_trait]
impl Queue for Deep {
    fn max_batch(&self) -> usize {
        10
    }

    async fn send_batch(&self, messages: &[QueueMessage]) -> Result<SendReport, QueueError> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(messages);
        Ok(SendReport::default())
    }

    async fn backlog(&self) -> Result<Option<u64>, QueueError> {
        Ok(*self.depth.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// How many deliveries a housekeeping pass over every store handed back to the relay.
async fn rescued(env: &Env) -> u64 {
    let (reports, failures) = housekeep_all(&env.engine, "hk").await;
    assert!(failures.is_empty(), "{failures:?}");
    reports.iter().map(|r| r.rescued).sum()
}

async fn pass(env: &Env) -> RelayReport {
    let report = relay(&env.engine, Instant::now() + Duration::from_secs(5)).await;
    report.unwrap_or_else(|e| panic!("{e}"))
}

async fn a_backlog_is_waited_for_and_a_lost_message_is_resent(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let queue = Arc::new(Deep::default());
    env.engine.queue = Arc::clone(&queue) as Arc<dyn Queue>;
    for _ in 0..3 {
        let order = json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
        let outcome = commit_unsent(&env.engine, request("place_order", order)).await;
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        enqueue_now(&env.engine, &outcome.store, &outcome.deliveries).await;
    }
    assert_eq!(queue.taken(), 6, "{kind:?}: each order's two deliveries sent at commit");
    let window = env.engine.settings.redelivery_after;
    env.clock.advance(chrono::Duration::from_std(window * 2).unwrap_or_default());

    // Six messages in the queue account for the six unfinished deliveries: nothing is re-sent,
    // and housekeeping hands none back to the relay.
    queue.set_depth(Some(6));
    assert_eq!(rescued(&env).await, 0, "{kind:?}: housekeeping waits for the backlog too");
    let report = pass(&env).await;
    assert_eq!((report.sent, report.resent, report.waiting), (0, 0, 6), "{kind:?}");
    assert_eq!(queue.taken(), 0, "{kind:?}");

    // Four messages account for four: two are presumed lost and re-sent.
    queue.set_depth(Some(4));
    let report = pass(&env).await;
    assert_eq!((report.sent, report.resent, report.waiting), (2, 2, 4), "{kind:?}");
    assert_eq!(queue.taken(), 2, "{kind:?}");

    // An empty queue accounts for none: the four still stale are re-sent (the two just sent
    // are not stale yet).
    queue.set_depth(Some(0));
    let report = pass(&env).await;
    assert_eq!((report.sent, report.resent, report.waiting), (4, 4, 0), "{kind:?}");
    assert_eq!(queue.taken(), 4, "{kind:?}");

    // A queue that cannot tell: every stale delivery is presumed lost, as before backlogs were
    // read; housekeeping hands them back, and the relay sends them as due.
    env.clock.advance(chrono::Duration::from_std(window * 2).unwrap_or_default());
    queue.set_depth(None);
    assert_eq!(rescued(&env).await, 6, "{kind:?}: handed back with no backlog known");
    let report = pass(&env).await;
    assert_eq!((report.sent, report.resent, report.waiting), (6, 0, 0), "{kind:?}: as due");
    assert_eq!(queue.taken(), 6, "{kind:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_backlog_is_waited_for_and_a_lost_message_is_resent() {
    a_backlog_is_waited_for_and_a_lost_message_is_resent(Kind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_backlog_is_waited_for_and_a_lost_message_is_resent() {
    a_backlog_is_waited_for_and_a_lost_message_is_resent(Kind::Postgres).await;
}

/// The edges' commit sends its own deliveries and marks them sent, so the relay has nothing to
/// send for them; one left unsent is the relay's to send.
async fn commit_sends_its_own_deliveries(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let queue = Arc::new(Deep::default());
    env.engine.queue = Arc::clone(&queue) as Arc<dyn Queue>;
    let order = || json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]});
    let sent = jadpo_engine::commit::commit(&env.engine, request("place_order", order())).await;
    let sent = sent.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((sent.deliveries.len(), queue.taken()), (2, 2), "{kind:?}: sent at commit");
    let grace = env.engine.settings.relay_grace * 2;
    env.clock.advance(chrono::Duration::from_std(grace).unwrap_or_default());
    let report = pass(&env).await;
    assert_eq!((report.sent, queue.taken()), (0, 0), "{kind:?}: marked sent, not sent again");

    let unsent = commit_unsent(&env.engine, request("place_order", order())).await;
    let unsent = unsent.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((unsent.deliveries.len(), queue.taken()), (2, 0), "{kind:?}: left unsent");
    let report = pass(&env).await;
    assert_eq!(report.sent, 0, "{kind:?}: within the grace a sender may still be sending");
    let grace = env.engine.settings.relay_grace * 2;
    env.clock.advance(chrono::Duration::from_std(grace).unwrap_or_default());
    let report = pass(&env).await;
    assert_eq!((report.sent, queue.taken()), (2, 2), "{kind:?}: the relay sends them");
}

jadpo_test_env::both!(commit_sends_its_own_deliveries);
