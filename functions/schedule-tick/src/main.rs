//! Lambda `schedule-tick`: on each scheduled event (EventBridge, every minute), one tick pass:
//! every due schedule's runs and skipped ticks recorded under its lease. Wiring only: the work is
//! `jadpo_runtime::passes::tick_pass`.

use std::process::ExitCode;

use jadpo_lambda::{exit_code, scheduled_engine};
use jadpo_runtime::passes::{lease_owner, tick_pass};
use jadpo_runtime::telemetry;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;

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
    let owner = lease_owner("schedule-tick");
    let owner = owner.as_str();
    lambda_runtime::run(service_fn(move |_event: LambdaEvent<Value>| async move {
        let report = tick_pass(engine, owner).await?;
        Ok::<Value, Error>(report.to_json())
    }))
    .await
}
