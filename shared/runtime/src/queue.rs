//! The queue of a process that does not send (the operator's CLI): what it commits stays "never
//! sent", and the relay puts it on the real queue.

use async_trait::async_trait;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};

/// The queue of a process that does not send (the operator's CLI): every send is refused, so
/// what it commits stays "never sent" and the relay puts it on the real queue.
#[derive(Debug, Clone, Copy, Default)]
pub struct RelayLater;

#[async_trait]
impl Queue for RelayLater {
    fn max_batch(&self) -> usize {
        10
    }

    async fn send_batch(&self, _: &[QueueMessage]) -> Result<SendReport, QueueError> {
        Err(QueueError::Unavailable("this process does not send; the relay will".to_owned()))
    }
}
