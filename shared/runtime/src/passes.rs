//! One pass of each scheduled job, as the deployed functions and the local process run it: the
//! relay (bounded by the invocation's deadline), a schedule tick, housekeeping over every store,
//! and the lease owner that names the process holding a lease.

use std::time::Instant;

use jadpo_core::SystemClock;
use jadpo_engine::Engine;
use jadpo_engine::housekeeping::{HousekeepingError, HousekeepingReport, housekeep_all};
use jadpo_engine::relay::{RelayReport, relay};
use jadpo_engine::schedule::{ScheduleOpError, TickReport, tick};

/// A lease owner naming this process: the role, the process id and a unique suffix, so a
/// log line shows which invocation held a lease.
pub fn lease_owner(role: &str) -> String {
    format!("{role}:{}:{}", std::process::id(), jadpo_core::id::new_id(&SystemClock))
}

/// One tick pass over the schedule store.
pub async fn tick_pass(engine: &Engine, owner: &str) -> Result<TickReport, ScheduleOpError> {
    tick(engine, owner).await
}

/// Why a housekeeping pass failed in at least one store (the others were still done).
#[derive(Debug, thiserror::Error)]
#[error("housekeeping failed in {} store(s): {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct HousekeepingFailed(pub Vec<HousekeepingError>);

/// One housekeeping pass over every store; the reports, or the failures after every store was
/// tried.
pub async fn housekeeping_pass(
    engine: &Engine,
    owner: &str,
) -> Result<Vec<HousekeepingReport>, HousekeepingFailed> {
    let (reports, failures) = housekeep_all(engine, owner).await;
    for report in &reports {
        tracing::info!(report = %report.to_json(), "housekeeping pass");
    }
    if failures.is_empty() { Ok(reports) } else { Err(HousekeepingFailed(failures)) }
}

/// One relay pass, stopping the engine's `relay_margin` (`JADPO_RELAY_MARGIN_MS`) before
/// `deadline` (the invocation's own deadline).
pub async fn relay_pass(
    engine: &Engine,
    deadline: Instant,
) -> Result<RelayReport, jadpo_core::StoreError> {
    let margin = engine.settings.relay_margin;
    relay(engine, deadline.checked_sub(margin).unwrap_or_else(Instant::now)).await
}
