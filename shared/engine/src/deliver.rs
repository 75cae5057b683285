//! Delivery: one delivery, one subscriber run, exactly one effect.
//!
//! The subscriber runs in a transaction on *its* store that first inserts its handled-delivery
//! record; a second copy of the message (or a redelivery after a crash between that commit and
//! the delivery's update) finds the record, runs nothing, and marks the delivery handled.

use std::sync::Arc;

use jadpo_core::app::{HandlerContext, HandlerError, SubscriberSpec};
use jadpo_core::model::breaker::{AttemptResult, Gate};
use jadpo_core::model::delivery::{Delivery, DeliveryStatus, Outcome};
use jadpo_core::model::sign_in;
use jadpo_core::ports::SignInStore;
use jadpo_core::{Store, StoreError};

use crate::breaker::{admit, settle};
use crate::commit::{CommitError, Origin, write_emitted};
use crate::context::Engine;
use crate::relay::enqueue_now;

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
    p: &Engine,
    event_store: &Arc<dyn Store>,
    delivery_id: &str,
) -> Result<DeliveryResult, StoreError> {
    let Some(delivery) = event_store.delivery_get(delivery_id).await? else {
        return Ok(DeliveryResult::Gone);
    };
    crate::fault!("deliver.after_load");
    if delivery.status != DeliveryStatus::Pending {
        return Ok(DeliveryResult::Finished(delivery.status));
    }
    let Some(spec) = p.app.subscriber(&delivery.subscriber) else {
        let failure = format!(
            "subscriber {:?} is no longer declared by the application",
            delivery.subscriber
        );
        return finish(
            p,
            event_store.as_ref(),
            &delivery,
            Outcome::Failed { failure, retry_at: None },
        )
        .await;
    };
    let breaker = match &spec.connection {
        Some(connection) => {
            let policy = p.app.breaker_policy(connection).unwrap_or_default();
            let now = p.clock.now();
            let gate = admit(event_store.as_ref(), connection, &delivery.id, now, &policy).await?;
            if let Gate::Hold { until } = gate {
                tracing::debug!(delivery = %delivery.id, %connection, %until, "held by the circuit breaker");
                return Ok(DeliveryResult::Held);
            }
            Some((connection, policy))
        }
        None => None,
    };
    let attempt = run_subscriber(p, spec, &delivery).await?;
    if let Some((connection, policy)) = breaker {
        let result = match &attempt {
            Attempt::AlreadyHandled | Attempt::Done => AttemptResult::Success,
            Attempt::Failed { connection_failed: true, .. } => AttemptResult::ConnectionFailed,
            Attempt::Failed { .. } => AttemptResult::Other,
        };
        let now = p.clock.now();
        let settled = settle(event_store.as_ref(), connection, &delivery.id, result, now, &policy);
        if let Err(e) = settled.await {
            // The attempt itself is recorded below either way; a lost probe result frees the
            // probe after the policy's probe timeout.
            tracing::warn!(%connection, error = %e, "could not record the attempt on the circuit breaker");
        }
    }
    let outcome = match attempt {
        Attempt::AlreadyHandled => {
            record(p, event_store.as_ref(), &delivery, &Outcome::Handled).await?;
            return Ok(DeliveryResult::AlreadyHandled);
        }
        Attempt::Done => Outcome::Handled,
        Attempt::Failed { failure, retryable, .. } => {
            let retry_at = retryable
                .then(|| spec.retry.delay_after(delivery.attempts + 1))
                .flatten()
                .and_then(|d| chrono::Duration::from_std(d).ok())
                .map(|d| p.clock.now() + d);
            Outcome::Failed { failure, retry_at }
        }
    };
    finish(p, event_store.as_ref(), &delivery, outcome).await
}

enum Attempt {
    AlreadyHandled,
    Done,
    Failed { failure: String, retryable: bool, connection_failed: bool },
}

async fn run_subscriber(
    p: &Engine,
    spec: &SubscriberSpec,
    delivery: &Delivery,
) -> Result<Attempt, StoreError> {
    let store = p.store(&spec.store)?;
    let now = p.clock.now();
    let mut tx = store.begin().await?;
    if !store.handled_insert(tx.as_mut(), &delivery.id, &spec.name, now).await? {
        tx.rollback().await?;
        return Ok(Attempt::AlreadyHandled);
    }
    crate::fault!("deliver.after_handled_insert");
    let audited = p.app.has_audited(&spec.store);
    if audited {
        let actor = format!("subscriber:{}", spec.name);
        let who = jadpo_core::model::audit::AuditContext {
            actor: &actor,
            action: &spec.name,
            request_id: Some(&delivery.id),
            trace: delivery.traceparent.as_deref(),
            now,
        };
        store.audit_set_context(tx.as_mut(), &who).await?;
    }
    let mut ctx =
        HandlerContext::new(tx.as_mut(), p.connections.as_ref(), now, Some(delivery.id.clone()))
            .with_flags(p.flag_access(&spec.store))
            .with_sign_in(
                (spec.name == sign_in::MAIL_SUBSCRIBER)
                    .then_some(store.as_ref() as &dyn SignInStore),
            );
    let result = spec.handler.handle(&mut ctx, &delivery.event).await;
    let connection_failed = ctx.connection_failed();
    let emitted = ctx.into_emitted();
    let failure = match result {
        Ok(()) => {
            crate::fault!("deliver.after_subscriber");
            let origin = Origin {
                source: &spec.name,
                depth: delivery.event.chain_depth + 1,
                request_id: Some(&delivery.id),
                traceparent: delivery.traceparent.as_deref(),
                tracestate: None,
            };
            match write_emitted(p, store.as_ref(), tx.as_mut(), &emitted, &origin, now).await {
                Ok((_, queued)) => {
                    if audited {
                        store.audit_clear_context(tx.as_mut()).await?;
                    }
                    crate::fault!("deliver.before_subscriber_commit");
                    tx.commit().await?;
                    crate::fault!("deliver.after_subscriber_commit");
                    enqueue_now(p, &spec.store, &queued).await;
                    return Ok(Attempt::Done);
                }
                Err(CommitError::Store(e)) if e.is_retryable() => return Err(e),
                Err(
                    e @ (CommitError::ChainTooDeep { .. } | CommitError::UndeclaredEvent { .. }),
                ) => {
                    Attempt::Failed { failure: e.to_string(), retryable: false, connection_failed }
                }
                Err(e) => {
                    Attempt::Failed { failure: e.to_string(), retryable: true, connection_failed }
                }
            }
        }
        Err(HandlerError::Rejected { status, title, detail }) => Attempt::Failed {
            failure: format!("rejected ({status}) {title}: {detail}"),
            retryable: false,
            connection_failed,
        },
        Err(HandlerError::Store(e)) => {
            Attempt::Failed { failure: e.to_string(), retryable: true, connection_failed }
        }
        Err(HandlerError::Failed(why)) => {
            Attempt::Failed { failure: why, retryable: true, connection_failed }
        }
    };
    tx.rollback().await?;
    Ok(failure)
}

async fn record(
    p: &Engine,
    store: &dyn Store,
    delivery: &Delivery,
    outcome: &Outcome,
) -> Result<bool, StoreError> {
    store.delivery_record_outcome(&delivery.id, outcome, p.clock.now()).await
}

async fn finish(
    p: &Engine,
    store: &dyn Store,
    delivery: &Delivery,
    outcome: Outcome,
) -> Result<DeliveryResult, StoreError> {
    record(p, store, delivery, &outcome).await?;
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
    crate::fault!("deliver.after_outcome");
    Ok(match outcome {
        Outcome::Handled => DeliveryResult::Handled,
        Outcome::Failed { retry_at: Some(_), .. } => DeliveryResult::Retrying,
        Outcome::Failed { retry_at: None, .. } => DeliveryResult::Dead,
    })
}
