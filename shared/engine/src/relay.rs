//! The relay: puts deliveries on the queue, right after commit and in sweeps.
//!
//! A sweep claims due deliveries (never sent, sent and presumed lost, or due for retry) by
//! stamping `enqueued_at` in one statement, sends them in queue-sized batches, and clears the
//! stamp of any the queue refused. A crash after the stamp and before the send leaves the
//! delivery stamped but unsent: the next sweep after `redelivery_after` sends it again. Nothing
//! is lost; a message may be sent twice, which delivery dedupes.
//!
//! A delivery sent and unfinished after `redelivery_after` is either lost or still waiting in a
//! backlog. Re-sending every such delivery would, under sustained load, crowd the queue with
//! duplicates of messages that were only waiting. So where the queue can tell how many messages
//! it holds, a sweep re-sends only as many of them as the queue cannot account for (those stamped
//! longest ago first); the rest are left to wait. A lost message is then re-sent once the
//! backlog has shrunk below the deliveries it holds up, never dropped.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, Utc};
use jadpo_core::model::delivery::QueuedDelivery;
use jadpo_core::model::message::Pointer;
use jadpo_core::ports::{QueueError, QueueMessage};
use jadpo_core::{Store, StoreError};

use crate::context::Engine;

/// What one relay pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayReport {
    /// Deliveries (and workflow commands) put on the queue.
    pub sent: usize,
    /// Of those, deliveries sent before and presumed lost.
    pub resent: usize,
    /// Deliveries sent before and unfinished that were left to wait, the queue holding enough
    /// messages to account for them.
    pub waiting: usize,
    /// Deliveries the queue refused (left for the next pass).
    pub failed: usize,
}

/// One sweep over every store, stopping early at `deadline` (after at least one batch per store).
pub async fn relay(engine: &Engine, deadline: Instant) -> Result<RelayReport, StoreError> {
    let mut report = RelayReport::default();
    let now = engine.clock.now();
    let lost_before = jadpo_core::clock::before(now, engine.settings.redelivery_after);
    let mut allowance = lost_allowance(engine, lost_before, &mut report).await?;
    for (name, store) in &engine.stores {
        // Never sent, or due again after a failed attempt: nothing stamped is claimed.
        let sweep = Sweep { engine, name, store: store.as_ref(), deadline };
        sweep.run(DateTime::<Utc>::UNIX_EPOCH, None, &mut report).await?;
        if report.failed > 0 {
            break; // the queue is refusing: what is left waits for the next pass, not a retry now
        }
        // Sent and presumed lost, within what the queue cannot account for.
        let resent = sweep.run(lost_before, allowance, &mut report).await?;
        report.resent += resent;
        allowance = allowance.map(|a| a.saturating_sub(resent));
        if report.failed > 0 {
            break;
        }
    }
    report.sent += crate::workflow::runs::relay_commands(engine).await?;
    report.sent += crate::workflow::runs::resume_expired_runs(engine).await?;
    Ok(report)
}

/// How many deliveries sent before `lost_before` may be re-sent: all of them (`None`) when the
/// queue cannot tell its backlog or holds nothing; else those beyond what it holds.
async fn lost_allowance(
    engine: &Engine,
    lost_before: DateTime<Utc>,
    report: &mut RelayReport,
) -> Result<Option<usize>, StoreError> {
    let backlog = match engine.queue.backlog().await {
        Ok(Some(n)) if n > 0 => n,
        Ok(_) => return Ok(None),
        Err(e) => {
            tracing::warn!(error = %e, "the queue's backlog is unknown: deliveries sent long ago are presumed lost");
            return Ok(None);
        }
    };
    let mut stale = 0_u64;
    for store in engine.stores.values() {
        stale += store.deliveries_count_sent_before(lost_before).await?;
    }
    let allowed = stale.saturating_sub(backlog);
    report.waiting += usize::try_from(stale - allowed).unwrap_or(usize::MAX);
    Ok(Some(usize::try_from(allowed).unwrap_or(usize::MAX)))
}

/// Claims and sends one store's due deliveries in batches.
struct Sweep<'a> {
    engine: &'a Engine,
    name: &'a str,
    store: &'a dyn Store,
    deadline: Instant,
}

impl Sweep<'_> {
    /// Sends due deliveries (those stamped before `lost_before` among them), at most `limit`
    /// (`None`: no limit) and until the deadline, after at least one batch — even when the
    /// deadline is already near (or reported in the past by an emulator), every pass makes
    /// progress. Returns how many were sent.
    async fn run(
        &self,
        lost_before: DateTime<Utc>,
        limit: Option<usize>,
        report: &mut RelayReport,
    ) -> Result<usize, StoreError> {
        let (engine, store) = (self.engine, self.store);
        // Due as of `relay_grace` ago, so that the send right after a commit (which marks its
        // deliveries sent) is not raced; the claim is stamped that much earlier too, which
        // brings its redelivery window forward by as little.
        let grace = chrono::Duration::from_std(engine.settings.relay_grace).unwrap_or_default();
        let mut total = 0;
        let mut first = true;
        while first || Instant::now() < self.deadline {
            first = false;
            let batch = limit.map_or(engine.settings.relay_batch, |l| {
                (l - total).min(engine.settings.relay_batch)
            });
            if batch == 0 {
                break;
            }
            let as_of = engine.clock.now() - grace;
            let claimed = store.deliveries_claim_due(as_of, lost_before, batch).await?;
            if claimed.is_empty() {
                break;
            }
            crate::fault!("relay.after_claim");
            let (sent, failed) = send(engine, self.name, &claimed).await;
            crate::fault!("relay.after_send");
            if !failed.is_empty() {
                store.deliveries_unmark_enqueued(&failed).await?;
            }
            total += sent.len();
            report.sent += sent.len();
            report.failed += failed.len();
            if !failed.is_empty() {
                break; // the queue is refusing: leave the rest for the next pass
            }
        }
        Ok(total)
    }
}

/// Puts new deliveries on the queue right after their commit (best effort: what fails here is
/// left to the relay's sweep).
pub async fn enqueue_now(
    engine: &Engine,
    store: &str,
    deliveries: &[QueuedDelivery],
) -> RelayReport {
    if deliveries.is_empty() {
        return RelayReport::default();
    }
    let (sent, failed) = send(engine, store, deliveries).await;
    // A crash here leaves the messages sent and unmarked: the relay sends them again after its
    // grace, and delivery dedupes the repeat.
    fail::fail_point!("enqueue.after_send", |_| {
        crate::fault_points::record("enqueue.after_send");
        RelayReport::default()
    });
    if let Ok(s) = engine.store(store) {
        if let Err(e) = s.deliveries_mark_enqueued(&sent, engine.clock.now()).await {
            tracing::warn!(error = %e, "could not mark deliveries as enqueued; the relay will resend them");
        }
    }
    RelayReport { sent: sent.len(), failed: failed.len(), ..RelayReport::default() }
}

/// Sends `deliveries` in queue-sized batches; returns the ids sent and the ids refused.
async fn send(
    engine: &Engine,
    store: &str,
    deliveries: &[QueuedDelivery],
) -> (Vec<String>, Vec<String>) {
    let mut sent = Vec::new();
    let mut failed = Vec::new();
    for batch in deliveries.chunks(engine.queue.max_batch().max(1)) {
        let messages: Vec<QueueMessage> =
            batch.iter().enumerate().map(|(i, d)| message(store, i, d)).collect();
        match engine.queue.send_batch(&messages).await {
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
