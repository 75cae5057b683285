//! The loops of the local process: relay sweeps, the delivery worker over the in-process queue,
//! schedule ticks and housekeeping passes, each stopping on a shutdown signal after finishing
//! what it holds. Each loops over the same single-pass entry point the deployed function calls.

use std::time::{Duration, Instant};

use jadpo_core::ports::QueueMessage;
use jadpo_engine::Engine;
use jadpo_engine::deliver::DeliveryResult;
use jadpo_engine::dispatch::{DispatchError, Dispatched, dispatch};
use jadpo_engine::relay::relay;
use tokio::sync::{mpsc, watch};

/// Sweeps every `interval` until `shutdown` turns true.
pub async fn relay_loop(engine: Engine, interval: Duration, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        match relay(&engine, Instant::now() + interval / 2).await {
            Ok(report) if report.sent > 0 || report.failed > 0 => {
                tracing::info!(sent = report.sent, failed = report.failed, "relay pass");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "relay pass failed; the next one retries"),
        }
    }
}

/// Ticks schedules every `interval` (the first at once) until `shutdown` turns true.
pub async fn schedule_loop(
    engine: Engine,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let owner = jadpo_runtime::passes::lease_owner("local-tick");
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        match jadpo_runtime::passes::tick_pass(&engine, &owner).await {
            Ok(report) if !report.is_quiet() => {
                tracing::info!(report = %report.to_json(), "schedule tick");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "schedule tick failed; the next one retries"),
        }
    }
}

/// Runs a housekeeping pass at once and then every `interval` until `shutdown` turns true.
pub async fn housekeeping_loop(
    engine: Engine,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let owner = jadpo_runtime::passes::lease_owner("local-housekeeping");
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if let Err(e) = jadpo_runtime::passes::housekeeping_pass(&engine, &owner).await {
            tracing::warn!(error = %e, "housekeeping failed; the next pass retries");
        }
    }
}

/// Delivers queued messages until `shutdown` turns true, then delivers what is already queued
/// (draining in-flight work) and returns how many messages it handled in all.
pub async fn delivery_loop(
    engine: Engine,
    mut rx: mpsc::UnboundedReceiver<QueueMessage>,
    mut shutdown: watch::Receiver<bool>,
) -> usize {
    let mut handled = 0;
    loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(m) => { handle(&engine, &m).await; handled += 1; }
                None => return handled,
            },
            _ = shutdown.changed() => break,
        }
    }
    while let Ok(m) = rx.try_recv() {
        handle(&engine, &m).await;
        handled += 1;
    }
    handled
}

async fn handle(engine: &Engine, message: &QueueMessage) {
    match dispatch(engine, &message.body).await {
        Ok(Dispatched::Delivery(DeliveryResult::Dead)) => {
            tracing::warn!(body = %message.body, "delivery is dead after its last attempt")
        }
        Ok(result) => tracing::debug!(?result, "delivered"),
        Err(DispatchError::Malformed(why)) => {
            tracing::error!(%why, "unreadable message dropped (SQS would move it to the dead-letter queue)");
        }
        Err(e) => tracing::warn!(error = %e, "delivery failed; the relay will send it again"),
    }
}
