//! `jadpo-queue-sqs`: the queue port on Amazon SQS.
//!
//! Messages are sent in batches of up to 10 (`SendMessageBatch`), each carrying the emitting
//! request's W3C `traceparent` as a string message attribute. The client is configured the
//! standard way (region, credentials, and `AWS_ENDPOINT_URL_SQS` to point it at another endpoint,
//! such as a local SQS API in tests), over rustls with the ring provider: the one TLS stack.
//! SQS's own driver types never leave this crate.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use aws_smithy_http_client::tls;
use jadpo_core::ports::{Queue, QueueError, QueueMessage, SendReport};
use tokio::sync::OnceCell;

/// Why the client could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the SQS client: {0}")]
pub struct SetupError(String);

/// A queue on SQS.
#[derive(Debug, Clone)]
pub struct SqsQueue {
    /// Made at the first send when the queue comes from the environment: setting up the SDK
    /// (its configuration chain, the TLS trust store) is most of a function's init otherwise,
    /// and a relay pass with nothing due never sends.
    client: Arc<OnceCell<Client>>,
    queue_url: String,
    /// The last depth read and when: the admission check reuses it for a second.
    recent: Arc<std::sync::Mutex<Option<(std::time::Instant, u64)>>>,
}

/// How long a depth read for the admission check is reused.
const RECENT: std::time::Duration = std::time::Duration::from_secs(1);

/// The HTTPS client every SQS client uses: rustls with the ring provider, trusting the Mozilla
/// roots compiled in (the roots the connections' client trusts too). Not the platform's store:
/// reading and parsing every file under `/etc/ssl/certs` cost each function about 4 ms of its
/// cold start (BENCHMARKS.md, cold start).
pub fn https_client() -> aws_sdk_sqs::config::SharedHttpClient {
    let trust =
        tls::TrustStore::empty().with_native_roots(false).with_pem_certificate(mozilla_roots_pem());
    // `build` cannot fail today; were it to, the SDK's default (platform roots) still verifies.
    let context = tls::TlsContext::builder().with_trust_store(trust).build().unwrap_or_default();
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .tls_context(context)
        .build_https()
}

/// The `webpki-root-certs` certificates as one PEM bundle, the form the SDK's trust store takes.
fn mozilla_roots_pem() -> Vec<u8> {
    use base64::Engine;
    let mut pem = String::new();
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        let encoded = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in encoded.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem.into_bytes()
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
        Self {
            client: Arc::new(OnceCell::new_with(Some(client))),
            queue_url: queue_url.to_owned(),
            recent: Arc::default(),
        }
    }

    /// The queue at `queue_url` with a client configured from the environment.
    pub fn from_env(queue_url: &str) -> Result<Self, SetupError> {
        if !queue_url.starts_with("http://") && !queue_url.starts_with("https://") {
            return Err(SetupError(format!(
                "the queue URL must be an http(s) URL, got {queue_url:?}"
            )));
        }
        Ok(Self {
            client: Arc::new(OnceCell::new()),
            queue_url: queue_url.to_owned(),
            recent: Arc::default(),
        })
    }

    /// The client, configured from the environment at the first call when the queue was made
    /// by [`SqsQueue::from_env`] (also the tests' receive side).
    pub async fn client(&self) -> &Client {
        self.client.get_or_init(client_from_env).await
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
            .client()
            .await
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
            Err(e) => Err(queue_error(e)),
        }
    }

    /// The queue's approximate depth: messages visible, in flight and delayed.
    async fn backlog(&self) -> Result<Option<u64>, QueueError> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let read = self
            .client()
            .await
            .get_queue_attributes()
            .queue_url(&self.queue_url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(A::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(queue_error)?;
        let attributes = read.attributes().cloned().unwrap_or_default();
        let count = |name: A| attributes.get(&name).and_then(|v| v.parse::<u64>().ok());
        let counts = [
            count(A::ApproximateNumberOfMessages),
            count(A::ApproximateNumberOfMessagesNotVisible),
            count(A::ApproximateNumberOfMessagesDelayed),
        ];
        // A depth the queue did not give is unknown, not zero.
        Ok(counts.into_iter().sum::<Option<u64>>())
    }

    async fn backlog_recent(&self) -> Result<Option<u64>, QueueError> {
        let now = std::time::Instant::now();
        let kept = *self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, depth)) = kept.filter(|(at, _)| now.duration_since(*at) < RECENT) {
            return Ok(Some(depth));
        }
        let depth = self.backlog().await?;
        if let Some(depth) = depth {
            *self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some((now, depth));
        }
        Ok(depth)
    }
}

/// An SQS call's failure: refused when the service answered with an error code, else
/// unavailable.
fn queue_error<E, R>(e: aws_sdk_sqs::error::SdkError<E, R>) -> QueueError
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    use aws_sdk_sqs::error::ProvideErrorMetadata;
    let text = aws_sdk_sqs::error::DisplayErrorContext(&e).to_string();
    if e.code().is_some() { QueueError::Refused(text) } else { QueueError::Unavailable(text) }
}

#[cfg(test)]
mod tests {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    #[test]
    fn the_trust_bundle_holds_every_mozilla_root_as_valid_pem() {
        let pem = super::mozilla_roots_pem();
        let parsed: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("the bundle is not valid PEM: {e:?}"));
        let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS;
        assert!(roots.len() > 100, "{} roots", roots.len());
        assert_eq!(parsed.len(), roots.len());
        assert!(
            parsed.iter().zip(roots).all(|(p, r)| p.as_ref() == r.as_ref()),
            "same certificates"
        );
    }
}
