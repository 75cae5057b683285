//! The relay: puts deliveries on the queue, right after commit and in sweeps.
//!
//! A sweep claims due deliveries (never sent, sent and presumed lost, or due for retry) by
//! stamping `enqueued_at` in one statement, sends them in queue-sized batches, and clears the
//! stamp of any the queue refused. A crash after the stamp and before the send leaves the
//! delivery stamped but unsent: the next sweep after `redelivery_after` sends it again. Nothing
//! is lost; a message may be sent twice, which delivery dedupes.

use std::collections::BTreeMap;
use std::time::Instant;

use jadpo_core::StoreError;
use jadpo_core::model::delivery::QueuedDelivery;
use jadpo_core::model::message::Pointer;
use jadpo_core::ports::{QueueError, QueueMessage};

use crate::context::Engine;

/// What one relay pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayReport {
    /// Deliveries put on the queue.
    pub sent: usize,
    /// Deliveries the queue refused (left for the next pass).
    pub failed: usize,
}

/// One sweep over every store, stopping early at `deadline` (after at least one batch per store).
pub async fn relay(p: &Engine, deadline: Instant) -> Result<RelayReport, StoreError> {
    let mut report = RelayReport::default();
    for (name, store) in &p.stores {
        // At least one batch per store, even when the deadline is already near (or reported in
        // the past by an emulator): every pass makes progress.
        let mut first = true;
        while first || Instant::now() < deadline {
            first = false;
            let now = p.clock.now();
            let window = chrono::Duration::from_std(p.settings.redelivery_after)
                .unwrap_or(chrono::Duration::minutes(15));
            let claimed =
                store.deliveries_claim_due(now, now - window, p.settings.relay_batch).await?;
            if claimed.is_empty() {
                break;
            }
            crate::fault!("relay.after_claim");
            let (sent, failed) = send(p, name, &claimed).await;
            crate::fault!("relay.after_send");
            if !failed.is_empty() {
                store.deliveries_unmark_enqueued(&failed).await?;
            }
            report.sent += sent.len();
            report.failed += failed.len();
            if !failed.is_empty() {
                break; // the queue is refusing: leave the rest for the next pass
            }
        }
    }
    report.sent += crate::workflow::runs::relay_commands(p).await?;
    Ok(report)
}

/// Puts new deliveries on the queue right after their commit (best effort: what fails here is
/// left to the relay's sweep).
pub async fn enqueue_now(p: &Engine, store: &str, deliveries: &[QueuedDelivery]) -> RelayReport {
    if deliveries.is_empty() {
        return RelayReport::default();
    }
    let (sent, failed) = send(p, store, deliveries).await;
    if let Ok(s) = p.store(store) {
        if let Err(e) = s.deliveries_mark_enqueued(&sent, p.clock.now()).await {
            tracing::warn!(error = %e, "could not mark deliveries as enqueued; the relay will resend them");
        }
    }
    RelayReport { sent: sent.len(), failed: failed.len() }
}

/// Sends `deliveries` in queue-sized batches; returns the ids sent and the ids refused.
async fn send(
    p: &Engine,
    store: &str,
    deliveries: &[QueuedDelivery],
) -> (Vec<String>, Vec<String>) {
    let mut sent = Vec::new();
    let mut failed = Vec::new();
    for batch in deliveries.chunks(p.queue.max_batch().max(1)) {
        let messages: Vec<QueueMessage> =
            batch.iter().enumerate().map(|(i, d)| message(store, i, d)).collect();
        match p.queue.send_batch(&messages).await {
            Ok(report) => {
                let refused: Vec<usize> = report
                    .failed
                    .iter()
                    .filter_map(|(entry, _)| entry.parse::<usize>().ok())
                    .collect();
                for (i, d) in batch.iter().enumerate() {
                    if refused.contains(&i) {
                        failed.push(d.id.clone())
                    } else {
                        sent.push(d.id.clone())
                    }
                }
            }
            Err(QueueError::Unavailable(_) | QueueError::Refused(_)) => {
                failed.extend(batch.iter().map(|d| d.id.clone()));
            }
        }
    }
    (sent, failed)
}

fn message(store: &str, index: usize, d: &QueuedDelivery) -> QueueMessage {
    let body = Pointer::Delivery { store: store.to_owned(), delivery_id: d.id.clone() };
    let mut attributes = BTreeMap::new();
    if let Some(tp) = &d.traceparent {
        attributes.insert("traceparent".to_owned(), tp.clone());
    }
    QueueMessage { id: index.to_string(), body: body.to_body(), attributes }
}
