//! Lambda `outbox-relay`: on each scheduled event, one relay pass bounded by the invocation's
//! deadline. Wiring only: the work is `jadpo_runtime::passes::relay_pass`.

use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use jadpo_lambda::{exit_code, scheduled_engine};
use jadpo_runtime::passes::relay_pass;
use jadpo_runtime::telemetry;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> ExitCode {
    exit_code(match telemetry::init_tracing() {
        Ok(()) => run().await,
        Err(e) => Err(e.into()),
    })
}

async fn run() -> Result<(), Error> {
    let engine = scheduled_engine(jadpo_app::application()?).await?;
    let engine = &engine;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let remaining =
            event.context.deadline().duration_since(SystemTime::now()).unwrap_or_default();
        let report = relay_pass(engine, Instant::now() + remaining).await?;
        Ok::<Value, Error>(json!({
            "sent": report.sent,
            "resent": report.resent,
            "waiting": report.waiting,
            "failed": report.failed,
        }))
    }))
    .await
}
