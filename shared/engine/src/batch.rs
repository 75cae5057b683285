//! Delivery in batches: the messages a worker holds at once, delivered in a few round trips.
//!
//! Handled alone, a delivery costs six round trips and two commits (load; begin, handled
//! record, the subscriber's write, commit; outcome), and under load delivery fell four times
//! behind commit. Here the deliveries of one event store are loaded in one statement; those whose
//! subscribers make no calls (no connection declared) and write to the same store run in one
//! transaction there: their handled records inserted in one statement before the handlers run,
//! one after another, each writing through the shared transaction; their outcomes marked in one
//! statement in the same transaction when the delivery rows live in that store (else in one
//! statement after it commits). A delivery is still effective exactly once: its handled record
//! commits with its subscriber's writes, as alone.
//!
//! A subscriber's failure must not roll back its neighbours' effects for good: when a handler
//! fails (or wants to make a call, which is never made with a transaction open), the batch is
//! rolled back, that delivery is delivered alone (where its failure is recorded as an attempt,
//! with its retry) and the rest are tried again as a batch, at most [`MAX_SPLITS`] times before
//! the rest are delivered alone too. A fault of the database during the batch's own statements
//! fails the group's messages, which the queue delivers again (as a crash would).
//!
//! The deliveries that run alone (their subscribers make calls, or they were shed) run side by
//! side rather than one after another: each call's step records are synced writes of their own,
//! and writes made at once share their commits.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use jadpo_application::{Call, HandlerContext, HandlerError, RunServices, SubscriberSpec};
use jadpo_core::model::delivery::{Delivery, DeliveryStatus, QueuedDelivery};
use jadpo_core::model::step::step_key;
use jadpo_core::ports::PipelineStore;
use jadpo_core::{Store, StoreError, Transaction};
use serde_json::Value;

use crate::commit::write_emitted;
use crate::context::Engine;
use crate::deliver::{
    DeliveryResult, checkpoint, close_for_commit, deliver, deliver_loaded, origin,
    set_audit_context,
};
use crate::relay::enqueue_now;

/// How many failed deliveries a batch sheds (each then delivered alone) before the rest of it
/// are delivered alone too: a subscriber failing on every delivery costs a bounded number of
/// batch attempts, not one per delivery.
pub const MAX_SPLITS: usize = 2;

/// What became of each of `ids` (deliveries of `event_store`), in the same order. An error is
/// a fault of the infrastructure: that message should be retried by the queue.
pub async fn deliver_many(
    engine: &Engine,
    event_store: &Arc<dyn Store>,
    ids: &[String],
) -> Vec<Result<DeliveryResult, StoreError>> {
    let loaded = event_store.deliveries_get(ids).await.and_then(|loaded| {
        checkpoint(|| {
            crate::fault!("deliver.batch.after_load");
            Ok(())
        })
        .map(|()| loaded)
    });
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(e) => return ids.iter().map(|_| Err(copy(&e))).collect(),
    };
    let mut by_id: BTreeMap<&str, &Delivery> = loaded.iter().map(|d| (d.id.as_str(), d)).collect();
    let mut results: Vec<Option<Result<DeliveryResult, StoreError>>> =
        ids.iter().map(|_| None).collect();
    let mut groups: BTreeMap<&str, Vec<Item<'_>>> = BTreeMap::new();
    let mut alone = Vec::new();
    let mut again = Vec::new();
    for (at, id) in ids.iter().enumerate() {
        let Some(delivery) = by_id.remove(id.as_str()) else {
            if loaded.iter().any(|d| &d.id == id) {
                // A message held twice: its second copy is delivered (loaded again) after the
                // first, and finds what the first did.
                again.push(at);
            } else {
                results[at] = Some(Ok(DeliveryResult::Gone));
            }
            continue;
        };
        if delivery.status != DeliveryStatus::Pending {
            results[at] = Some(Ok(DeliveryResult::Finished(delivery.status)));
            continue;
        }
        match engine.app.subscriber(&delivery.subscriber) {
            Some(spec) if batchable(spec) && delivery.unreadable.is_none() => {
                groups.entry(spec.store.as_str()).or_default().push(Item { at, spec, delivery });
            }
            _ => alone.push((at, delivery)),
        }
    }
    let mut handled = Vec::new();
    for (store, group) in groups {
        if engine.near_deadline() {
            alone.extend(group.into_iter().map(|i| (i.at, i.delivery)));
            continue;
        }
        // Where the delivery rows live in the subscribers' store, their outcomes commit with
        // the subscribers' writes; else they are recorded after, in one statement.
        let in_tx = store == event_store.name();
        match deliver_group(engine, store, group, in_tx).await {
            Ok(Grouped { done, left }) => {
                if in_tx {
                    for (at, already) in done {
                        results[at] = Some(Ok(handled_result(already)));
                    }
                } else {
                    handled.extend(done);
                }
                alone.extend(left);
            }
            Err((e, group)) => {
                for (at, _) in group {
                    results[at] = Some(Err(copy(&e)));
                }
            }
        }
    }
    record_handled(engine, event_store, ids, handled, &mut results).await;
    for (at, result) in deliver_alone(engine, event_store, alone).await {
        results[at] = Some(result);
    }
    for at in again {
        results[at] = Some(deliver(engine, event_store, &ids[at]).await);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(StoreError::internal("a batched delivery got no result"))))
        .collect()
}

/// Delivers each of `alone` on its own, side by side: each makes its calls and commits its own
/// transactions, but while one waits for its provider or its commit another works, and their
/// synced writes that meet share a commit (SQLite's group commit; PostgreSQL's concurrent
/// flushes). Run one after another, a batch of deliveries making calls cost each its every
/// synced write.
async fn deliver_alone(
    engine: &Engine,
    event_store: &Arc<dyn Store>,
    alone: Vec<(usize, &Delivery)>,
) -> Vec<(usize, Result<DeliveryResult, StoreError>)> {
    let runs = alone.into_iter().map(|(at, delivery)| async move {
        if engine.near_deadline() {
            return (at, Err(not_started()));
        }
        (at, deliver_loaded(engine, event_store, delivery).await)
    });
    futures_util::future::join_all(runs).await
}

/// Whether a subscriber's deliveries can share a transaction: it declares no connection, so it
/// makes no calls (which are made before its transaction opens) and has no circuit breaker.
fn batchable(spec: &SubscriberSpec) -> bool {
    spec.connection.is_none()
}

/// A delivery left for the queue to send again: the invocation's deadline is too near to start
/// it (no attempt is counted on it).
pub(crate) fn not_started() -> StoreError {
    StoreError::unavailable("not started: the invocation's deadline is near")
}

fn copy(e: &StoreError) -> StoreError {
    StoreError::new(e.kind(), e.message())
}

fn handled_result(already: bool) -> DeliveryResult {
    if already { DeliveryResult::AlreadyHandled } else { DeliveryResult::Handled }
}

/// A delivery in a group: where its result goes, its subscriber, the row.
#[derive(Clone, Copy)]
struct Item<'d> {
    at: usize,
    spec: &'d SubscriberSpec,
    delivery: &'d Delivery,
}

/// A delivery committed in a batch: where its result (and id) goes, whether it was handled
/// before.
type Done = (usize, bool);

struct Grouped<'d> {
    done: Vec<Done>,
    left: Vec<(usize, &'d Delivery)>,
}

type GroupFailed<'d> = (StoreError, Vec<(usize, &'d Delivery)>);

/// Delivers the deliveries of subscribers writing to `store` in one transaction, shedding
/// failed ones to be delivered alone; `in_tx`: their rows live in `store` too.
async fn deliver_group<'d>(
    engine: &Engine,
    store: &str,
    mut group: Vec<Item<'d>>,
    in_tx: bool,
) -> Result<Grouped<'d>, GroupFailed<'d>> {
    let mut left = Vec::new();
    for _ in 0..=MAX_SPLITS {
        if group.is_empty() {
            break;
        }
        match run_batch(engine, store, &group, in_tx).await {
            Ok(Batch::Committed(already)) => {
                let done =
                    group.into_iter().map(|i| (i.at, already.contains(&i.delivery.id))).collect();
                return Ok(Grouped { done, left });
            }
            Ok(Batch::Shed(i)) => {
                let shed = group.remove(i);
                left.push((shed.at, shed.delivery));
            }
            Err(e) => {
                left.extend(group.into_iter().map(|i| (i.at, i.delivery)));
                return Err((e, left));
            }
        }
    }
    left.extend(group.into_iter().map(|i| (i.at, i.delivery)));
    Ok(Grouped { done: Vec::new(), left })
}

/// What a batch's transaction came to.
enum Batch {
    /// Committed; the ids that had been handled before (nothing ran for them).
    Committed(HashSet<String>),
    /// Rolled back: the delivery at this place failed (or wants to call out) and is delivered
    /// alone.
    Shed(usize),
}

/// One transaction on `store` over `items`: the handled records, then each handler with the
/// events it emits, then (`in_tx`) the deliveries' outcomes.
async fn run_batch(
    engine: &Engine,
    store_name: &str,
    items: &[Item<'_>],
    in_tx: bool,
) -> Result<Batch, StoreError> {
    let store = engine.store(store_name)?;
    let now = engine.clock.now();
    let rows: Vec<(&str, &str)> =
        items.iter().map(|i| (i.delivery.id.as_str(), i.spec.name.as_str())).collect();
    let mut tx = store.begin().await?;
    let fresh = match store.handled_insert_many(tx.as_mut(), &rows, now).await {
        Ok(fresh) => fresh.into_iter().collect::<HashSet<_>>(),
        Err(e) => {
            let _ = tx.rollback().await;
            return Err(e);
        }
    };
    if let Err(e) = checkpoint(|| {
        crate::fault!("deliver.batch.after_handled_insert");
        Ok(())
    }) {
        let _ = tx.rollback().await;
        return Err(e);
    }
    let mut queued = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if !fresh.contains(&item.delivery.id) {
            continue;
        }
        match run_one(engine, store.as_ref(), item.spec, item.delivery, tx).await {
            Ran::Done(back, more) => {
                tx = back;
                queued.extend(more);
            }
            Ran::Failed(back, why) => {
                tracing::debug!(delivery = %item.delivery.id, %why, "a batched delivery is delivered alone");
                if let Some(tx) = back {
                    tx.rollback().await?;
                }
                return Ok(Batch::Shed(i));
            }
        }
    }
    let ids: Vec<String> = items.iter().map(|i| i.delivery.id.clone()).collect();
    let audited = engine.app.has_audited(store_name);
    let handled: &[String] = if in_tx { &ids } else { &[] };
    let tx = close_for_commit(store.as_ref(), tx, audited, handled, now, || {
        crate::fault!("deliver.batch.before_commit");
        Ok(())
    });
    tx.await?.commit().await?;
    crate::fault!("deliver.batch.after_commit");
    enqueue_now(engine, store_name, &queued).await;
    Ok(Batch::Committed(ids.into_iter().filter(|id| !fresh.contains(id)).collect()))
}

/// One handler's turn in the batch's transaction.
enum Ran {
    Done(Box<dyn Transaction>, Vec<QueuedDelivery>),
    /// It failed; the transaction if the handler gave it back.
    Failed(Option<Box<dyn Transaction>>, String),
}

async fn run_one(
    engine: &Engine,
    store: &dyn Store,
    spec: &SubscriberSpec,
    delivery: &Delivery,
    mut tx: Box<dyn Transaction>,
) -> Ran {
    let now = engine.clock.now();
    if engine.app.has_audited(&spec.store) {
        if let Err(e) = set_audit_context(store, tx.as_mut(), spec, delivery, now).await {
            return Ran::Failed(Some(tx), e.to_string());
        }
    }
    let mut shared = Shared { tx: Some(tx), key: delivery.id.clone(), calls: false };
    let mut ctx = HandlerContext::new(&mut shared, now).with_flags(engine.flag_access(&spec.store));
    let result = spec.handler.handle(&mut ctx, &delivery.event).await;
    let (opened, emitted) = ctx.into_parts();
    let Some(mut tx) = opened.or_else(|| shared.tx.take()) else {
        return Ran::Failed(None, "the batch's transaction was not given back".to_owned());
    };
    if let Err(e) = result {
        return Ran::Failed(Some(tx), e.to_string());
    }
    if shared.calls {
        return Ran::Failed(Some(tx), "it makes calls".to_owned());
    }
    match write_emitted(engine, store, tx.as_mut(), &emitted, &origin(spec, delivery), now).await {
        Ok((_, queued)) => Ran::Done(tx, queued),
        Err(e) => Ran::Failed(Some(tx), e.to_string()),
    }
}

/// A batched handler's run: its writes go to the batch's transaction; a call is not made (it
/// would be made with the transaction open) but sends the delivery to be delivered alone.
struct Shared {
    tx: Option<Box<dyn Transaction>>,
    key: String,
    calls: bool,
}

#[async_trait]
impl RunServices for Shared {
    async fn begin_writes(&mut self) -> Result<Box<dyn Transaction>, HandlerError> {
        self.tx.take().ok_or_else(|| HandlerError::Failed("the transaction is in use".to_owned()))
    }

    async fn call(&mut self, call: Call) -> Result<Value, HandlerError> {
        self.calls = true;
        Err(HandlerError::Failed(format!(
            "a call to connection {:?} is made when the delivery runs alone",
            call.connection
        )))
    }

    fn next_call_key(&self) -> Option<String> {
        Some(step_key(&self.key, 0))
    }
}

/// Records the batches' handled deliveries (places in `ids`) on `event_store` in one statement.
async fn record_handled(
    engine: &Engine,
    event_store: &Arc<dyn Store>,
    ids: &[String],
    handled: Vec<Done>,
    results: &mut [Option<Result<DeliveryResult, StoreError>>],
) {
    if handled.is_empty() {
        return;
    }
    let handled_ids: Vec<String> = handled.iter().map(|(at, _)| ids[*at].clone()).collect();
    let recorded = mark_handled(engine, event_store.as_ref(), &handled_ids).await;
    for (at, already) in handled {
        results[at] = Some(match &recorded {
            Ok(_) => Ok(handled_result(already)),
            Err(e) => Err(copy(e)),
        });
    }
}

async fn mark_handled(
    engine: &Engine,
    store: &dyn PipelineStore,
    ids: &[String],
) -> Result<u64, StoreError> {
    let changed = store.deliveries_record_handled(ids, engine.clock.now()).await?;
    crate::fault!("deliver.batch.after_outcomes");
    Ok(changed)
}
