//! Lambda `delivery`: an SQS batch → subscribers, answering `SqsBatchResponse` so that only the
//! messages that met an infrastructure fault are retried. Wiring only: the work is
//! `jadpo_lambda::deliver_batch`.

use std::process::ExitCode;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use jadpo_lambda::{deliver_batch, deployed_engine, exit_code, invocation_deadline};
use jadpo_runtime::telemetry;
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> ExitCode {
    exit_code(match telemetry::init_tracing() {
        Ok(()) => run().await,
        Err(e) => Err(e.into()),
    })
}

async fn run() -> Result<(), Error> {
    let engine = deployed_engine(jadpo_app::application()?).await?;
    let engine = &engine;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let deadline = invocation_deadline(event.context.deadline);
        Ok::<SqsBatchResponse, Error>(deliver_batch(engine, event.payload, deadline).await)
    }))
    .await
}
