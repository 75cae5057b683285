//! Lambda `housekeeping`: on each scheduled event (EventBridge, hourly), one housekeeping pass
//! over every store under its lease. Wiring only: the work is
//! `jadpo_runtime::passes::housekeeping_pass`.

use std::process::ExitCode;

use jadpo_lambda::{exit_code, scheduled_engine};
use jadpo_runtime::passes::{housekeeping_pass, lease_owner};
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
    let owner = lease_owner("housekeeping");
    let owner = owner.as_str();
    lambda_runtime::run(service_fn(move |_event: LambdaEvent<Value>| async move {
        let reports = housekeeping_pass(engine, owner).await?;
        Ok::<Value, Error>(Value::Array(reports.iter().map(|r| r.to_json()).collect()))
    }))
    .await
}
