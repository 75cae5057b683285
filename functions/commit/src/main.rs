//! Lambda `commit`: API Gateway HTTP API → `POST /actions/{name}`, `GET /healthz`. Wiring only:
//! the routes are `jadpo_http`, the work is `jadpo_engine::commit::commit`.

use std::process::ExitCode;
use std::sync::Arc;

use jadpo_http::{HttpState, router};
use jadpo_lambda::{deployed_engine, exit_code};
use jadpo_runtime::telemetry;

#[tokio::main]
async fn main() -> ExitCode {
    telemetry::init_tracing();
    exit_code(run().await)
}

async fn run() -> Result<(), lambda_http::Error> {
    let app = jadpo_app::application()?;
    let default_store = app.default_store().to_owned();
    let engine = deployed_engine(app).await?;
    let keys = Arc::clone(engine.store(&default_store)?);
    lambda_http::run(router(HttpState { engine, keys })).await
}
