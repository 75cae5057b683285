//! `jadpo-lambda`: the Lambda edge the five deployed functions share: starting (the deployed
//! engine from the environment, an exit status that logs why a start failed) and the delivery
//! function's SQS batch. Each function's `main.rs` is wiring only; the passes the scheduled
//! functions run are `jadpo_runtime::passes`, shared with the local process. Infrastructure faults (a store down, an unreadable message) are reported per message
//! as `batchItemFailures`, so SQS retries them and, past the queue's `maxReceiveCount`, moves
//! them to the dead-letter queue; a subscriber's own failure is recorded on its delivery instead.

use std::sync::Arc;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use chrono::{DateTime, Utc};
use jadpo_application::Application;
use jadpo_core::ports::{Connections, NoConnections};
use jadpo_engine::Engine;
use jadpo_engine::dispatch::dispatch_many;
use jadpo_runtime::{Mode, Wiring};

pub mod secrets;

/// Why a function could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The application's declaration is invalid.
    #[error(transparent)]
    App(#[from] jadpo_application::AppError),
    /// The configuration is invalid, or a store could not be opened.
    #[error(transparent)]
    Wiring(#[from] jadpo_runtime::WiringError),
    /// The HTTP client for connections could not be built.
    #[error(transparent)]
    Client(#[from] jadpo_runtime::connections::ClientError),
    /// The queue could not be set up.
    #[error(transparent)]
    Queue(#[from] jadpo_queue_sqs::SetupError),
    /// A secret could not be read.
    #[error(transparent)]
    Secret(#[from] secrets::SecretError),
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

/// Builds the engine of a deployed function that runs handlers (`commit`, `delivery`) from the
/// environment, its secrets read from Secrets Manager ([`secrets`]): stores, SQS queue
/// (`JADPO_QUEUE_URL`), connections, and the files' S3 bucket (`JADPO_FILES_BUCKET`) if any. Called once per cold start.
pub async fn deployed_engine(app: Application) -> Result<Engine, StartError> {
    engine_for(app, Mode::Deployed).await
}

/// The same for a scheduled function (`outbox-relay`, `schedule-tick`, `housekeeping`): stores
/// and queue only; it is given no connection URL and no sealing key, and calls none.
pub async fn scheduled_engine(app: Application) -> Result<Engine, StartError> {
    engine_for(app, Mode::DeployedScheduled).await
}

async fn engine_for(app: Application, mode: Mode<'static>) -> Result<Engine, StartError> {
    let vars = secrets::resolve(std::env::vars().collect()).await?;
    let wiring = Wiring::from_vars(Arc::new(app), &vars, mode)?;
    let queue_url = wiring.config.queue_url.clone().unwrap_or_default();
    let queue = Arc::new(jadpo_queue_sqs::SqsQueue::from_env(&queue_url)?);
    let connections = match mode {
        Mode::DeployedScheduled => Arc::new(NoConnections) as Arc<dyn Connections>,
        _ => wiring.http_connections()?,
    };
    let mut engine = wiring.engine(queue, connections);
    if let Some(bucket) = &wiring.config.files_bucket {
        engine.blobs = Some(Arc::new(jadpo_blobs_s3::S3Blobs::from_env(bucket)));
    }
    Ok(engine)
}

/// Handles one SQS batch: every message is delivered; those that failed for the
/// infrastructure's reasons are returned as batch item failures. With the invocation's
/// `deadline` (the Lambda context's), each run holds its step records until the deadline at most
/// and starts no call it could not finish before it; and no message is started within the
/// margin kept before the deadline: the rest are returned as
/// batch item failures untouched, so SQS sends them again after the visibility timeout without
/// an attempt counted on their deliveries.
pub async fn deliver_batch(
    base: &Engine,
    event: SqsEvent,
    deadline: Option<DateTime<Utc>>,
) -> SqsBatchResponse {
    let engine = base.until(deadline);
    if let Some(deadline) = engine.runs.deadline {
        tracing::debug!(%deadline, "batch under the invocation's deadline");
    }
    let mut failures = Vec::new();
    let (ids, bodies): (Vec<String>, Vec<&str>) = event
        .records
        .iter()
        .map(|r| (r.message_id.clone().unwrap_or_default(), r.body.as_deref().unwrap_or_default()))
        .unzip();
    if engine.near_deadline() {
        tracing::info!(
            left = ids.len(),
            "near the deadline: messages not started are returned to SQS"
        );
        failures.extend(ids.into_iter().map(item_failure));
    } else {
        // Batched: a subscriber's deliveries share a transaction; each message still gets its
        // own answer, so only the failed ones return to the queue.
        let results = dispatch_many(&engine, &bodies).await;
        for (id, result) in ids.into_iter().zip(results) {
            if let Err(e) = result {
                tracing::warn!(message_id = %id, error = %e, "delivery failed; SQS will retry the message");
                failures.push(item_failure(id));
            }
        }
    }
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures;
    response
}

fn item_failure(id: String) -> BatchItemFailure {
    let mut failure = BatchItemFailure::default();
    failure.item_identifier = id;
    failure
}

/// The invocation's deadline from the Lambda context's (epoch milliseconds).
pub fn invocation_deadline(context_deadline_ms: u64) -> Option<DateTime<Utc>> {
    i64::try_from(context_deadline_ms).ok().and_then(DateTime::from_timestamp_millis)
}
