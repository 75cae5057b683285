//! Delivery: one delivery, one subscriber run, exactly one effect.
//!
//! The subscriber makes its calls first (recorded steps, no transaction open), then writes in a
//! transaction on *its* store that first inserts its handled-delivery record; a second copy of
//! the message (or a redelivery after a crash between that commit and the delivery's update)
//! finds the record (or the run's finished step record), commits nothing, and marks the
//! delivery handled. Where the delivery row lives in the subscriber's own store, it is marked
//! handled in that same transaction (one write fewer); elsewhere, right after it.

use std::sync::Arc;

use async_trait::async_trait;
use jadpo_application::{HandlerContext, HandlerError, RunServices, SubscriberSpec};
use jadpo_core::model::delivery::{Delivery, DeliveryStatus, Outcome};
use jadpo_core::model::sign_in;
use jadpo_core::ports::PipelineStore;
use jadpo_core::{Store, StoreError, Transaction};

use crate::commit::{CommitError, Origin, write_emitted};
use crate::context::Engine;
use crate::gates::{CallGates, Ended};
use crate::relay::enqueue_now;
use crate::steps::{Interrupt, OpenError, Opener, Run, Runner};

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryResult {
    /// The subscriber ran and its effect committed.
    Handled,
    /// The subscriber had already handled it; nothing ran.
    AlreadyHandled,
    /// The delivery had already ended (handled, dead or discarded).
    Finished(DeliveryStatus),
    /// The delivery row no longer exists (cleaned up); nothing to do.
    Gone,
    /// The subscriber failed; it will be retried when due.
    Retrying,
    /// The subscriber failed for the last time, or can never succeed.
    Dead,
    /// The connection's circuit breaker is open: held, not attempted; it comes back when the
    /// breaker lets a probe through or closes.
    Held,
}

/// Delivers `delivery_id` of `event_store` (the store its event was written to) to its subscriber.
/// An error is a fault of the infrastructure: the message should be retried by the queue.
pub async fn deliver(
    engine: &Engine,
    event_store: &Arc<dyn Store>,
    delivery_id: &str,
) -> Result<DeliveryResult, StoreError> {
    let Some(delivery) = event_store.delivery_get(delivery_id).await? else {
        return Ok(DeliveryResult::Gone);
    };
    crate::fault!("deliver.after_load");
    deliver_loaded(engine, event_store, &delivery).await
}

/// Delivers `delivery`, as loaded from `event_store`, to its subscriber on its own.
pub(crate) async fn deliver_loaded(
    engine: &Engine,
    event_store: &Arc<dyn Store>,
    delivery: &Delivery,
) -> Result<DeliveryResult, StoreError> {
    if delivery.status != DeliveryStatus::Pending {
        return Ok(DeliveryResult::Finished(delivery.status));
    }
    let Some(spec) = engine.app.subscriber(&delivery.subscriber) else {
        let failure = format!(
            "subscriber {:?} is no longer declared by the application",
            delivery.subscriber
        );
        return finish(
            engine,
            event_store.as_ref(),
            delivery,
            Outcome::Failed { failure, retry_at: None },
        )
        .await;
    };
    if let Some(failure) = &delivery.unreadable {
        let retry_at = spec.retry.delay_after(delivery.attempts + 1);
        let retry_at = retry_at.map(|d| jadpo_core::clock::after(engine.clock.now(), d));
        let outcome = Outcome::Failed { failure: failure.clone(), retry_at };
        return finish(engine, event_store.as_ref(), delivery, outcome).await;
    }
    let mut gates = CallGates::new(event_store, &delivery.id);
    if let Some(connection) = &spec.connection {
        if gates.admit(engine, connection).await?.is_some() {
            return Ok(DeliveryResult::Held);
        }
    }
    let (attempt, gates) =
        run_subscriber(engine, event_store.name(), spec, delivery, gates).await?;
    let ended = match &attempt {
        Attempt::AlreadyHandled | Attempt::Done { .. } => Ended::Succeeded,
        Attempt::Failed { .. } | Attempt::Deferred { .. } | Attempt::Held => Ended::NotSucceeded,
    };
    gates.settle_all(engine, ended).await;
    let outcome = match attempt {
        Attempt::AlreadyHandled => {
            record(engine, event_store.as_ref(), delivery, &Outcome::Handled).await?;
            return Ok(DeliveryResult::AlreadyHandled);
        }
        Attempt::Done { recorded: true } => {
            crate::fault!("deliver.after_outcome");
            return Ok(DeliveryResult::Handled);
        }
        Attempt::Done { recorded: false } => Outcome::Handled,
        Attempt::Failed { failure, retryable, .. } => {
            let retry_at = retryable
                .then(|| spec.retry.delay_after(delivery.attempts + 1))
                .flatten()
                .map(|d| jadpo_core::clock::after(engine.clock.now(), d));
            Outcome::Failed { failure, retry_at }
        }
        Attempt::Deferred { reason, until } => Outcome::Deferred { reason, until },
        // Its hold was written with the gate that held it.
        Attempt::Held => return Ok(DeliveryResult::Held),
    };
    finish(engine, event_store.as_ref(), delivery, outcome).await
}

enum Attempt {
    AlreadyHandled,
    /// It ran and committed; `recorded`: its delivery was marked handled in that transaction.
    Done {
        recorded: bool,
    },
    Failed {
        failure: String,
        retryable: bool,
    },
    /// A call's connection's breaker held the delivery during its run.
    Held,
    /// Not attempted: another runner holds the run until then.
    Deferred {
        reason: String,
        until: chrono::DateTime<chrono::Utc>,
    },
}

/// Opens a subscriber's transaction: its handled record first, then the audit context.
struct SubscriberOpener<'a> {
    engine: &'a Engine,
    store: &'a dyn Store,
    spec: &'a SubscriberSpec,
    delivery: &'a Delivery,
}

#[async_trait]
impl Opener for SubscriberOpener<'_> {
    async fn open(&self) -> Result<Box<dyn Transaction>, OpenError> {
        let (store, spec, delivery) = (self.store, self.spec, self.delivery);
        let now = self.engine.clock.now();
        let mut tx = store.begin().await?;
        match store.handled_insert(tx.as_mut(), &delivery.id, &spec.name, now).await {
            Ok(true) => {}
            Ok(false) => {
                tx.rollback().await?;
                return Err(OpenError::Interrupt(Interrupt::AlreadyHandled));
            }
            Err(e) => {
                let _ = tx.rollback().await;
                return Err(e.into());
            }
        }
        crate::fault!("deliver.after_handled_insert");
        if self.engine.app.has_audited(&spec.store) {
            set_audit_context(store, tx.as_mut(), spec, delivery, now).await?;
        }
        Ok(tx)
    }
}

/// Where the events a subscriber emits come from: its delivery, one link further down the chain.
pub(crate) fn origin<'a>(spec: &'a SubscriberSpec, delivery: &'a Delivery) -> Origin<'a> {
    Origin {
        source: &spec.name,
        depth: delivery.event.chain_depth + 1,
        request_id: Some(&delivery.id),
        traceparent: delivery.traceparent.as_deref(),
        tracestate: delivery.tracestate.as_deref(),
    }
}

/// Names the subscriber and its delivery as who made the audited writes that follow in `tx`.
pub(crate) async fn set_audit_context(
    store: &dyn jadpo_core::ports::AuditStore,
    tx: &mut dyn Transaction,
    spec: &SubscriberSpec,
    delivery: &Delivery,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    let actor = format!("subscriber:{}", spec.name);
    let who = jadpo_core::model::audit::AuditContext {
        actor: &actor,
        action: &spec.name,
        request_id: Some(&delivery.id),
        trace: delivery.traceparent.as_deref(),
        now,
    };
    store.audit_set_context(tx, &who).await
}

async fn run_subscriber(
    engine: &Engine,
    event_store: &str,
    spec: &SubscriberSpec,
    delivery: &Delivery,
    gates: CallGates,
) -> Result<(Attempt, CallGates), StoreError> {
    let store = engine.store(&spec.store)?;
    let now = engine.clock.now();
    let opener = SubscriberOpener { engine, store: store.as_ref(), spec, delivery };
    let attempt = delivery.attempts + 1;
    let mut run = Run::new(
        engine,
        store.as_ref(),
        &opener,
        Runner::Subscriber,
        delivery.id.clone(),
        &spec.name,
        attempt,
    )
    .with_mode(spec.steps)
    .with_gates(gates);
    let mut ctx = HandlerContext::new(&mut run, now)
        .with_flags(engine.flag_access(&spec.store))
        .with_sign_in(
            (spec.name == sign_in::MAIL_SUBSCRIBER)
                .then_some(store.as_ref() as &dyn jadpo_core::ports::SignInStore),
        )
        .with_files(engine.file_access(&spec.store, store.as_ref()));
    let result = spec.handler.handle(&mut ctx, &delivery.event).await;
    let (tx, emitted) = ctx.into_parts();
    let gates = match run.gates.take() {
        Some(gates) => gates,
        None => CallGates::new(engine.store(event_store)?, &delivery.id),
    };
    if run.interrupt.is_some() {
        // Only a handled record interrupts a subscriber.
        if let Some(tx) = tx {
            tx.rollback().await?;
        }
        return Ok((Attempt::AlreadyHandled, gates));
    }
    if gates.held().is_some() {
        // Held by a breaker during its run (even if the handler went on): nothing commits.
        if let Some(tx) = tx {
            tx.rollback().await?;
        }
        run.release().await;
        return Ok((Attempt::Held, gates));
    }
    if let Some(e) = run.runtime_failed.take() {
        // The database failed as the writes began: not an attempt of the subscriber's.
        run.release().await;
        return Err(e);
    }
    let outcome = match result {
        Ok(()) => {
            crate::fault!("deliver.after_subscriber");
            let at = Delivering { event_store, spec, delivery };
            finish_run(engine, &at, &mut run, tx, &emitted).await?
        }
        Err(e) => {
            if let Some(tx) = tx {
                tx.rollback().await?;
            }
            Finished::Failed(failed(e))
        }
    };
    let attempt = match outcome {
        Finished::Done { recorded } => Attempt::Done { recorded },
        Finished::AlreadyHandled => Attempt::AlreadyHandled,
        Finished::Failed((failure, retryable)) => match run.held_until.take() {
            Some(until) => Attempt::Deferred { reason: failure, until },
            None => {
                run.release().await;
                Attempt::Failed { failure, retryable }
            }
        },
    };
    Ok((attempt, gates))
}

enum Finished {
    /// Committed; `recorded`: with the delivery marked handled.
    Done {
        recorded: bool,
    },
    AlreadyHandled,
    Failed((String, bool)),
}

/// A handler's error as a delivery's failure: what it says and whether a retry can help.
fn failed(e: HandlerError) -> (String, bool) {
    match e {
        HandlerError::Rejected { status, title, detail } => {
            (format!("rejected ({status}) {title}: {detail}"), false)
        }
        HandlerError::Store(e) => (e.to_string(), true),
        HandlerError::Failed(why) | HandlerError::Later(why) => (why, true),
    }
}

/// A delivery being run: the store its row lives in, its subscriber, the row.
struct Delivering<'a> {
    event_store: &'a str,
    spec: &'a SubscriberSpec,
    delivery: &'a Delivery,
}

/// Commits a subscriber's run: its transaction (opened now if the handler wrote nothing), the
/// events it emitted, its step record finished, and the delivery marked handled where its row
/// lives in the subscriber's store.
async fn finish_run(
    engine: &Engine,
    at: &Delivering<'_>,
    run: &mut Run<'_>,
    tx: Option<Box<dyn Transaction>>,
    emitted: &[jadpo_application::Emitted],
) -> Result<Finished, StoreError> {
    let (spec, delivery) = (at.spec, at.delivery);
    let store = engine.store(&spec.store)?;
    let mut tx = match tx {
        Some(tx) => tx,
        None => match run.begin_writes().await {
            Ok(tx) => tx,
            Err(_) if run.interrupt.is_some() => return Ok(Finished::AlreadyHandled),
            Err(e) => {
                if let Some(e) = run.runtime_failed.take() {
                    run.release().await;
                    return Err(e);
                }
                return Ok(Finished::Failed(failed(e)));
            }
        },
    };
    let now = engine.clock.now();
    let origin = origin(spec, delivery);
    let failure =
        match write_emitted(engine, store.as_ref(), tx.as_mut(), emitted, &origin, now).await {
            Ok((_, queued)) => match run.finish(tx.as_mut()).await {
                Ok(()) => {
                    let recorded = at.event_store == spec.store;
                    let handled = if recorded { std::slice::from_ref(&delivery.id) } else { &[] };
                    let audited = engine.app.has_audited(&spec.store);
                    let answered = run.answers_with_finish();
                    let tx = close_for_commit(store.as_ref(), tx, audited, handled, now, || {
                        if answered {
                            crate::fault!("steps.after_answer");
                        }
                        crate::fault!("deliver.before_subscriber_commit");
                        Ok(())
                    });
                    let committed = async { tx.await?.commit().await }.await;
                    if let Err(e) = committed {
                        // Not committed: the run's held answer is written as it is given up.
                        run.release().await;
                        return Err(e);
                    }
                    crate::fault!("deliver.after_subscriber_commit");
                    enqueue_now(engine, &spec.store, &queued).await;
                    return Ok(Finished::Done { recorded });
                }
                Err(e) => failed(e),
            },
            Err(CommitError::Store(e)) if e.is_retryable() => {
                let _ = tx.rollback().await;
                run.release().await;
                return Err(e);
            }
            Err(e @ (CommitError::ChainTooDeep { .. } | CommitError::UndeclaredEvent { .. })) => {
                (e.to_string(), false)
            }
            Err(e) => (e.to_string(), true),
        };
    tx.rollback().await?;
    Ok(Finished::Failed(failure))
}

/// Readies a subscriber's transaction (or a batch's) for its commit: the audit context cleared
/// (`audited`), the deliveries `handled` marked handled (those whose rows live in this store),
/// then the fault point `before_commit`. On any error the transaction is rolled back before the
/// error is answered, so the rows it locked (the deliveries among them) are free for the relay's
/// next sweep at once; dropped, it would be rolled back later, on a task of its own, and the
/// sweep's `SKIP LOCKED` claim would pass them by meanwhile.
pub(crate) async fn close_for_commit(
    store: &dyn Store,
    mut tx: Box<dyn Transaction>,
    audited: bool,
    handled: &[String],
    now: chrono::DateTime<chrono::Utc>,
    before_commit: impl FnOnce() -> Result<(), StoreError>,
) -> Result<Box<dyn Transaction>, StoreError> {
    let closed = async {
        if audited {
            store.audit_clear_context(tx.as_mut()).await?;
        }
        if !handled.is_empty() {
            store.deliveries_mark_handled(tx.as_mut(), handled, now).await?;
        }
        checkpoint(before_commit)
    };
    match closed.await {
        Ok(()) => Ok(tx),
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// Runs a fault point (a no-op unless faults are compiled in) as a result.
pub(crate) fn checkpoint(point: impl FnOnce() -> Result<(), StoreError>) -> Result<(), StoreError> {
    point()
}

async fn record(
    engine: &Engine,
    store: &dyn PipelineStore,
    delivery: &Delivery,
    outcome: &Outcome,
) -> Result<bool, StoreError> {
    store.delivery_record_outcome(&delivery.id, outcome, engine.clock.now()).await
}

async fn finish(
    engine: &Engine,
    store: &dyn Store,
    delivery: &Delivery,
    outcome: Outcome,
) -> Result<DeliveryResult, StoreError> {
    record(engine, store, delivery, &outcome).await?;
    if let Outcome::Failed { failure, retry_at } = &outcome {
        // Every failed attempt, not only a breaker's transitions: what an operator reads first.
        let attempt = delivery.attempts + 1;
        let (id, subscriber) = (&delivery.id, &delivery.subscriber);
        match retry_at {
            Some(at) => {
                tracing::warn!(delivery = %id, %subscriber, attempt, %failure, retry_at = %at, "delivery attempt failed")
            }
            None => {
                tracing::error!(delivery = %id, %subscriber, attempt, %failure, "delivery attempt failed; the delivery is dead")
            }
        }
    }
    if let Outcome::Deferred { reason, until } = &outcome {
        let (id, subscriber) = (&delivery.id, &delivery.subscriber);
        tracing::info!(delivery = %id, %subscriber, %reason, %until, "delivery deferred, its attempts unchanged");
    }
    crate::fault!("deliver.after_outcome");
    Ok(match outcome {
        Outcome::Handled => DeliveryResult::Handled,
        Outcome::Failed { retry_at: Some(_), .. } => DeliveryResult::Retrying,
        Outcome::Failed { retry_at: None, .. } => DeliveryResult::Dead,
        Outcome::Deferred { .. } => DeliveryResult::Retrying,
    })
}
