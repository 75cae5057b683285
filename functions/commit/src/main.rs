//! Lambda `commit`: API Gateway HTTP API → `POST /actions/{name}`, `GET /healthz`. Wiring only:
//! the routes are `jadpo_runtime::http`, the work is `jadpo_core::pipeline::commit`.

use std::sync::Arc;

use jadpo_runtime::http::{HttpState, router};
use jadpo_runtime::lambda::deployed_pipeline;
use jadpo_runtime::telemetry;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init_tracing();
    let app = jadpo_app::application()?;
    let default_store = app.default_store().to_owned();
    let pipeline = deployed_pipeline(app).await?;
    let keys = Arc::clone(pipeline.store(&default_store)?);
    lambda_http::run(router(HttpState { pipeline, keys })).await
}
