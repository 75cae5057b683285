//! Lambda `commit`: API Gateway HTTP API → `POST /actions/{name}`, `POST /webhooks/{source}`,
//! `GET /healthz`, `GET /readyz`.
//! Wiring only: the routes are `jadpo_http`, the work is `jadpo_engine::commit::commit`.

use std::process::ExitCode;

use jadpo_fn_commit::with_invocation_deadline;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_lambda::{deployed_engine, exit_code};
use jadpo_runtime::telemetry;

#[tokio::main]
async fn main() -> ExitCode {
    exit_code(match telemetry::init_tracing() {
        Ok(()) => run().await,
        Err(e) => Err(e.into()),
    })
}

async fn run() -> Result<(), lambda_http::Error> {
    let app = jadpo_app::application()?;
    let secrets = jadpo_runtime::config::webhook_secrets_from_env(&app)?;
    let engine = deployed_engine(app).await?;
    // Mailed sign-in links point at the public URL; cookies are always `Secure` when deployed.
    let web = WebSettings {
        public_url: std::env::var("JADPO_PUBLIC_URL").ok().filter(|u| !u.is_empty()),
        secure_cookies: true,
    };
    let state = HttpState::new(engine, web)?.with_webhook_secrets(secrets);
    lambda_http::run(with_invocation_deadline(router(state))).await
}
