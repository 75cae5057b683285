//! The cold-start benchmark's second reference: the smallest function that reads its secrets at
//! cold start as the Jadpo functions do — every `JADPO_SECRET_<VARIABLE>` from Secrets Manager,
//! all at once, over the same HTTPS client — then answers every event with the event. Measured
//! against it, a function's init shows what Jadpo adds, apart from the round trip to the secrets.

use aws_config::BehaviorVersion;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let secrets: Vec<String> = std::env::vars()
        .filter(|(name, _)| name.starts_with("JADPO_SECRET_"))
        .map(|(_, reference)| reference.split('#').next().unwrap_or_default().to_owned())
        .collect();
    let config = aws_config::defaults(BehaviorVersion::latest())
        .http_client(jadpo_queue_sqs::https_client())
        .load()
        .await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let reads: Vec<_> = secrets
        .into_iter()
        .map(|secret| {
            let client = client.clone();
            tokio::spawn(async move { client.get_secret_value().secret_id(secret).send().await })
        })
        .collect();
    for read in reads {
        read.await??;
    }
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(event.payload)
    }))
    .await
}
