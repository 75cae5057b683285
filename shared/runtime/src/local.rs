//! The loops of the local process: relay sweeps and the delivery worker over the in-process
//! queue, both stopping on a shutdown signal after finishing what they hold.

use std::time::{Duration, Instant};

use jadpo_core::pipeline::{DeliverError, DeliveryResult, Pipeline, deliver, relay};
use jadpo_core::queue::QueueMessage;
use tokio::sync::{mpsc, watch};

/// Sweeps every `interval` until `shutdown` turns true.
pub async fn relay_loop(
    pipeline: Pipeline,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        match relay(&pipeline, Instant::now() + interval / 2).await {
            Ok(report) if report.sent > 0 || report.failed > 0 => {
                tracing::info!(sent = report.sent, failed = report.failed, "relay pass");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "relay pass failed; the next one retries"),
        }
    }
}

/// Delivers queued messages until `shutdown` turns true, then delivers what is already queued
/// (draining in-flight work) and returns how many messages it handled in all.
pub async fn delivery_loop(
    pipeline: Pipeline,
    mut rx: mpsc::UnboundedReceiver<QueueMessage>,
    mut shutdown: watch::Receiver<bool>,
) -> usize {
    let mut handled = 0;
    loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(m) => { handle(&pipeline, &m).await; handled += 1; }
                None => return handled,
            },
            _ = shutdown.changed() => break,
        }
    }
    while let Ok(m) = rx.try_recv() {
        handle(&pipeline, &m).await;
        handled += 1;
    }
    handled
}

async fn handle(pipeline: &Pipeline, message: &QueueMessage) {
    match deliver(pipeline, &message.body).await {
        Ok(DeliveryResult::Dead) => {
            tracing::warn!(body = %message.body, "delivery is dead after its last attempt")
        }
        Ok(result) => tracing::debug!(?result, "delivered"),
        Err(DeliverError::Malformed(why)) => {
            tracing::error!(%why, "unreadable message dropped (SQS would move it to the dead-letter queue)");
        }
        Err(e) => tracing::warn!(error = %e, "delivery failed; the relay will send it again"),
    }
}
