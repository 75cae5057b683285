//! The in-process queue: the local stand-in for SQS, an unbounded channel to the delivery loop.
//!
//! Like SQS it carries only pointers to delivery rows, may be sent the same delivery twice, and
//! loses nothing the database still holds: a message lost with the process is resent by the
//! relay's sweep.

use async_trait::async_trait;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};
use tokio::sync::mpsc;

/// The sending side; the receiver goes to the delivery loop.
#[derive(Debug, Clone)]
pub struct InProcessQueue {
    sender: mpsc::UnboundedSender<QueueMessage>,
}

impl InProcessQueue {
    /// A queue and the receiver of its messages.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<QueueMessage>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self { sender }, receiver)
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
            }
        }
        Ok(report)
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
    }
}
