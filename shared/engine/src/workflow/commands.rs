//! Carrying a run's commands to the queue: at once after the transition that made them (best
//! effort), and again by the relay's sweep for those never sent or lost. Shared by starting a run
//! and by every later transition.

use std::collections::BTreeMap;

use jadpo_core::model::message::Pointer;
use jadpo_core::ports::QueueMessage;
use jadpo_workflow::kernel::NewCommand;

use crate::context::Engine;

fn command_message(store: &str, index: usize, command_id: &str) -> QueueMessage {
    QueueMessage {
        id: index.to_string(),
        body: Pointer::Command { store: store.to_owned(), command_id: command_id.to_owned() }
            .to_body(),
        attributes: BTreeMap::new(),
    }
}

/// Puts new commands on the queue at once (best effort: the relay sends what fails here).
pub async fn enqueue_commands(engine: &Engine, store: &str, run_id: &str, commands: &[NewCommand]) {
    if commands.is_empty() {
        return;
    }
    let messages: Vec<QueueMessage> =
        commands.iter().enumerate().map(|(i, c)| command_message(store, i, &c.id)).collect();
    if engine.queue.send_batch(&messages).await.is_err() {
        return;
    }
    if let Ok(s) = engine.store(store) {
        for c in commands {
            if let Err(e) = s.command_mark_enqueued(&c.id, run_id, engine.clock.now()).await {
                tracing::warn!(error = %e, "could not mark a command as enqueued; the relay will resend it");
            }
        }
    }
}

/// Sends commands `ids` of store `store` in the queue's batches; returns how many went. A batch
/// the queue refuses stays pending, for the relay's sweep for lost commands.
pub(super) async fn send_commands(engine: &Engine, store: &str, ids: &[String]) -> usize {
    let mut sent = 0;
    for chunk in ids.chunks(engine.queue.max_batch().max(1)) {
        let messages: Vec<QueueMessage> =
            chunk.iter().enumerate().map(|(i, id)| command_message(store, i, id)).collect();
        if engine.queue.send_batch(&messages).await.is_ok() {
            sent += chunk.len();
        }
    }
    sent
}
