//! The smallest `lambda_runtime` function: it answers every event with the event. The cold-start
//! benchmark measures each Jadpo function against it, built the same way in the same run.

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(event.payload)
    }))
    .await
}
