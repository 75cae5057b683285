//! `jadpo-queue-sqs`: the queue port on Amazon SQS.
//!
//! Messages are sent in batches of up to 10 (`SendMessageBatch`), each carrying the emitting
//! request's W3C `traceparent` as a string message attribute. The client is configured the
//! standard way (region, credentials, and `AWS_ENDPOINT_URL_SQS` to point it at another endpoint,
//! such as a local SQS API in tests), over rustls with the ring provider: the one TLS stack.
//! SQS's own driver types never leave this crate.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use aws_smithy_http_client::tls;
use jadpo_core::queue::{Queue, QueueError, QueueMessage, SendReport};

/// Why the client could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the SQS client: {0}")]
pub struct SetupError(String);

/// A queue on SQS.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: Client,
    queue_url: String,
}

/// The HTTPS client every SQS client uses: rustls with the ring provider.
pub fn https_client() -> aws_sdk_sqs::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .build_https()
}

/// An SQS client configured from the environment, over rustls with ring.
pub async fn client_from_env() -> Client {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(https_client())
        .load()
        .await;
    Client::new(&config)
}

/// A client for an SQS-compatible endpoint with static credentials (local SQS APIs, tests).
pub fn client_for_endpoint(
    endpoint: &str,
    region: &str,
    access_key: &str,
    secret_key: &str,
) -> Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new(region.to_owned()))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            access_key, secret_key, None, None, "static",
        ))
        .http_client(https_client())
        .build();
    Client::from_conf(config)
}

impl SqsQueue {
    /// The queue at `queue_url`, through `client`.
    pub fn new(client: Client, queue_url: &str) -> Self {
        Self { client, queue_url: queue_url.to_owned() }
    }

    /// The queue at `queue_url` with a client configured from the environment.
    pub async fn from_env(queue_url: &str) -> Result<Self, SetupError> {
        if !queue_url.starts_with("http://") && !queue_url.starts_with("https://") {
            return Err(SetupError(format!(
                "the queue URL must be an http(s) URL, got {queue_url:?}"
            )));
        }
        Ok(Self::new(client_from_env().await, queue_url))
    }

    /// The underlying client (for the tests' receive side).
    pub fn client(&self) -> &Client {
        &self.client
    }
}

fn entry(m: &QueueMessage) -> Result<SendMessageBatchRequestEntry, QueueError> {
    let mut attributes = BTreeMap::new();
    for (name, value) in &m.attributes {
        let attribute = MessageAttributeValue::builder()
            .data_type("String")
            .string_value(value)
            .build()
            .map_err(|e| QueueError::Refused(e.to_string()))?;
        attributes.insert(name.clone(), attribute);
    }
    SendMessageBatchRequestEntry::builder()
        .id(&m.id)
        .message_body(&m.body)
        .set_message_attributes((!attributes.is_empty()).then(|| attributes.into_iter().collect()))
        .build()
        .map_err(|e| QueueError::Refused(e.to_string()))
}

#[async_trait]
impl Queue for SqsQueue {
    fn max_batch(&self) -> usize {
        10
    }

    async fn send_batch(&self, messages: &[QueueMessage]) -> Result<SendReport, QueueError> {
        if messages.is_empty() {
            return Ok(SendReport::default());
        }
        if messages.len() > self.max_batch() {
            return Err(QueueError::Refused(format!(
                "a batch holds at most 10 messages, got {}",
                messages.len()
            )));
        }
        let entries = messages.iter().map(entry).collect::<Result<Vec<_>, _>>()?;
        let sent = self
            .client
            .send_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await;
        match sent {
            Ok(output) => Ok(SendReport {
                failed: output
                    .failed()
                    .iter()
                    .map(|f| (f.id().to_owned(), f.message().unwrap_or(f.code()).to_owned()))
                    .collect(),
            }),
            Err(e) => {
                let text = aws_sdk_sqs::error::DisplayErrorContext(&e).to_string();
                match e.into_service_error() {
                    service if service.meta().code().is_some() => Err(QueueError::Refused(text)),
                    _ => Err(QueueError::Unavailable(text)),
                }
            }
        }
    }
}
