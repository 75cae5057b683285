//! Lambda edge helpers: what the deployed functions do with their events, and the wiring they
//! share. Infrastructure faults (a store down, an unreadable message) are reported per message
//! as `batchItemFailures`, so SQS retries them and, past the queue's `maxReceiveCount`, moves
//! them to the dead-letter queue; a subscriber's own failure is recorded on its delivery instead.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use jadpo_core::SystemClock;
use jadpo_core::app::Application;
use jadpo_engine::Engine;
use jadpo_engine::dispatch::dispatch;
use jadpo_engine::housekeeping::{HousekeepingError, HousekeepingReport, housekeep_all};
use jadpo_engine::relay::{RelayReport, relay};
use jadpo_engine::schedule::{ScheduleOpError, TickReport, tick};

use crate::config::Mode;
use crate::wiring::Wiring;

/// Why a function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The application's declaration is invalid.
    #[error(transparent)]
    App(#[from] jadpo_core::app::AppError),
    /// The configuration is invalid, or a store could not be opened.
    #[error(transparent)]
    Wiring(#[from] crate::wiring::WiringError),
    /// The HTTP client for connections could not be built.
    #[error(transparent)]
    Client(#[from] crate::connections::ClientError),
    /// The queue could not be set up.
    #[error(transparent)]
    Queue(#[from] jadpo_queue_sqs::SetupError),
}

/// A function's error, as `lambda_runtime` and `lambda_http` box it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A function's exit status. A failure to start (or a runtime that stopped) is logged with its
/// message and causes, not the `Debug` form a `main` returning `Result` would print, and the
/// process exits with status 1, which Lambda reports as an init error beside that log line.
pub fn exit_code(result: Result<(), BoxError>) -> std::process::ExitCode {
    let Err(error) = result else {
        return std::process::ExitCode::SUCCESS;
    };
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(error = %message, "the function stopped");
    std::process::ExitCode::FAILURE
}

/// Builds the deployed engine from the environment: stores, SQS queue (`JADPO_QUEUE_URL`),
/// connections. Called once per cold start.
pub async fn deployed_engine(app: Application) -> Result<Engine, StartError> {
    let wiring = Wiring::from_env(Arc::new(app), Mode::Deployed)?;
    let queue_url = wiring.config.queue_url.clone().unwrap_or_default();
    let queue = Arc::new(jadpo_queue_sqs::SqsQueue::from_env(&queue_url)?);
    Ok(wiring.engine(queue, wiring.http_connections()?))
}

/// Handles one SQS batch: every message is delivered; those that failed for the
/// infrastructure's reasons are returned as batch item failures.
pub async fn deliver_batch(p: &Engine, event: SqsEvent) -> SqsBatchResponse {
    let mut failures = Vec::new();
    for record in event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let body = record.body.as_deref().unwrap_or_default();
        if let Err(e) = dispatch(p, body).await {
            tracing::warn!(message_id = %id, error = %e, "delivery failed; SQS will retry the message");
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failures.push(failure);
        }
    }
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures;
    response
}

/// A lease owner naming this process: the role, the process id and a unique suffix, so a
/// log line shows which invocation held a lease.
pub fn lease_owner(role: &str) -> String {
    format!("{role}:{}:{}", std::process::id(), jadpo_core::id::new_id(&SystemClock))
}

/// One tick pass over the schedule store.
pub async fn tick_pass(p: &Engine, owner: &str) -> Result<TickReport, ScheduleOpError> {
    tick(p, owner).await
}

/// Why a housekeeping pass failed in at least one store (the others were still done).
#[derive(Debug, thiserror::Error)]
#[error("housekeeping failed in {} store(s): {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct HousekeepingFailed(pub Vec<HousekeepingError>);

/// One housekeeping pass over every store; the reports, or the failures after every store was
/// tried.
pub async fn housekeeping_pass(
    p: &Engine,
    owner: &str,
) -> Result<Vec<HousekeepingReport>, HousekeepingFailed> {
    let (reports, failures) = housekeep_all(p, owner).await;
    for report in &reports {
        tracing::info!(report = %report.to_json(), "housekeeping pass");
    }
    if failures.is_empty() { Ok(reports) } else { Err(HousekeepingFailed(failures)) }
}

/// One relay pass, stopping `margin` before `deadline` (the invocation's own deadline).
pub async fn relay_pass(
    p: &Engine,
    deadline: Instant,
    margin: Duration,
) -> Result<RelayReport, jadpo_core::StoreError> {
    relay(p, deadline.checked_sub(margin).unwrap_or_else(Instant::now)).await
}
