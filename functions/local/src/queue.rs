//! The in-process queue: the local stand-in for SQS, an unbounded channel to the delivery loop.
//!
//! Like SQS it carries only pointers to delivery rows, may be sent the same delivery twice, and
//! loses nothing the database still holds: a message lost with the process is resent by the
//! relay's sweep.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};
use tokio::sync::mpsc;

/// The sending side; the receiver goes to the delivery loop.
#[derive(Debug, Clone)]
pub struct InProcessQueue {
    sender: mpsc::UnboundedSender<QueueMessage>,
    backlog: Option<Backlog>,
}

/// The count of messages sent and not yet finished by a delivery worker, which the relay reads
/// to tell a backlog from a lost message.
#[derive(Debug, Clone, Default)]
pub struct Backlog(Arc<AtomicU64>);

impl Backlog {
    /// A message was handled (whatever its outcome): it no longer holds a place in the queue.
    pub fn finished(&self) {
        let _ = self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    fn sent(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// Messages sent and not yet finished.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl InProcessQueue {
    /// A queue and the receiver of its messages; its backlog is unknown.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<QueueMessage>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self { sender, backlog: None }, receiver)
    }

    /// A queue whose backlog is counted: whoever takes its messages calls
    /// [`Backlog::finished`] once per message handled.
    pub fn counted() -> (Self, mpsc::UnboundedReceiver<QueueMessage>, Backlog) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let backlog = Backlog::default();
        (Self { sender, backlog: Some(backlog.clone()) }, receiver, backlog)
    }
}

#[async_trait]
impl Queue for InProcessQueue {
    fn max_batch(&self) -> usize {
        10
    }

    async fn send_batch(&self, messages: &[QueueMessage]) -> Result<SendReport, QueueError> {
        if messages.len() > self.max_batch() {
            return Err(QueueError::Refused(format!(
                "a batch holds at most 10 messages, got {}",
                messages.len()
            )));
        }
        let mut report = SendReport::default();
        for m in messages {
            if self.sender.send(m.clone()).is_err() {
                report.failed.push((m.id.clone(), "the delivery loop has stopped".to_owned()));
            } else if let Some(backlog) = &self.backlog {
                backlog.sent();
            }
        }
        Ok(report)
    }

    async fn backlog(&self) -> Result<Option<u64>, QueueError> {
        Ok(self.backlog.as_ref().map(Backlog::count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str) -> QueueMessage {
        QueueMessage { id: id.to_owned(), body: "{}".to_owned(), attributes: Default::default() }
    }

    #[tokio::test]
    async fn messages_arrive_in_order_and_a_stopped_loop_is_reported() {
        let (queue, mut rx) = InProcessQueue::new();
        let report = queue.send_batch(&[message("0"), message("1")]).await;
        assert_eq!(report.ok().map(|r| r.failed.len()), Some(0));
        assert_eq!(rx.recv().await.map(|m| m.id), Some("0".to_owned()));
        assert_eq!(rx.recv().await.map(|m| m.id), Some("1".to_owned()));
        let eleven: Vec<_> = (0..11).map(|i| message(&i.to_string())).collect();
        assert!(matches!(queue.send_batch(&eleven).await, Err(QueueError::Refused(_))));
        drop(rx);
        let report = queue.send_batch(&[message("2")]).await.ok().unwrap_or_default();
        assert_eq!(report.failed.len(), 1);
        assert_eq!(queue.backlog().await.ok(), Some(None), "not counted");
    }

    #[tokio::test]
    async fn a_counted_queue_holds_what_is_sent_until_it_is_finished() {
        let (queue, mut rx, backlog) = InProcessQueue::counted();
        let sent = queue.send_batch(&[message("0"), message("1")]).await;
        assert_eq!(sent.ok().map(|r| r.failed.len()), Some(0));
        assert_eq!(queue.backlog().await.ok(), Some(Some(2)));
        let _ = rx.recv().await;
        assert_eq!(queue.backlog().await.ok(), Some(Some(2)), "taken is not finished");
        backlog.finished();
        backlog.finished();
        backlog.finished();
        assert_eq!(queue.backlog().await.ok(), Some(Some(0)), "never below zero");
        drop(rx);
        let _ = queue.send_batch(&[message("2")]).await;
        assert_eq!(backlog.count(), 0, "a refused message is not counted");
    }
}
