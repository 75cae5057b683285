//! The queue port: how deliveries and workflow commands travel between functions.
//!
//! Deployed, it is SQS (`jadpo-queue-sqs`); locally, an in-process queue. Messages are small
//! pointers (a delivery or command id plus trace context), never payloads: the database row is the
//! truth, the message only says "look at this row now". Duplicates are allowed and deduped by the
//! database, so `send_batch` may be retried freely.

use async_trait::async_trait;
use std::collections::BTreeMap;

/// One message to put on the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMessage {
    /// Id unique within one batch (SQS batch entry id); reported back on partial failure.
    pub id: String,
    /// The message body (JSON pointing at a database row).
    pub body: String,
    /// String attributes, e.g. W3C `traceparent`.
    pub attributes: BTreeMap<String, String>,
}

/// The outcome of sending a batch: which entries failed, by [`QueueMessage::id`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendReport {
    /// Ids of messages the queue did not accept, with the reason.
    pub failed: Vec<(String, String)>,
}

/// Why a queue operation failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The queue could not be reached; retry later.
    #[error("queue unavailable: {0}")]
    Unavailable(String),
    /// The request was refused (bad message, too large a batch, no permission).
    #[error("queue refused the request: {0}")]
    Refused(String),
}

/// A queue the runtime puts messages on.
#[async_trait]
pub trait Queue: Send + Sync {
    /// The most messages one [`send_batch`](Queue::send_batch) call takes (10 on SQS).
    fn max_batch(&self) -> usize;

    /// Sends up to [`max_batch`](Queue::max_batch) messages.
    async fn send_batch(&self, messages: &[QueueMessage]) -> Result<SendReport, QueueError>;

    /// How many messages the queue holds, waiting or being handled, when it can tell (`None`:
    /// it cannot). The relay presumes a sent, unfinished delivery lost only where the queue
    /// holds too few messages to account for it, so a backlog is waited for, not re-sent.
    async fn backlog(&self) -> Result<Option<u64>, QueueError> {
        Ok(None)
    }

    /// As [`backlog`](Queue::backlog), but a queue whose reading costs a request may answer one
    /// made up to a second ago: the commit path's admission check reads it on every request.
    async fn backlog_recent(&self) -> Result<Option<u64>, QueueError> {
        self.backlog().await
    }
}
