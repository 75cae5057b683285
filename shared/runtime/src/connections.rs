//! Connections over HTTP (`reqwest` on rustls with the ring provider, the one TLS stack).
//!
//! Each declared connection has a base URL (`JADPO_CONNECTION_<NAME>_URL`; locally the
//! process's own sink at `/sink/<name>`). Calls are `POST` with a JSON body, a timeout, and the
//! `Idempotency-Key` the handler context supplies.
//!
//! Hardened, because what a service answers (and how it fails) reaches events, deliveries'
//! `last_failure` and logs: a path must stay on the base URL's host; redirects are not followed
//! (a 3xx is an answer like any other status); an answer's body is read up to 1 MiB; and an
//! error never carries the URL (which may hold a secret or an internal address), only what
//! happened.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jadpo_core::ports::{ConnectionError, ConnectionRequest, ConnectionResponse, Connections};
use serde_json::Value;

/// Connections by name, over one HTTP client.
#[derive(Debug, Clone)]
pub struct HttpConnections {
    client: reqwest::Client,
    bases: BTreeMap<String, url::Url>,
    /// A header sent with every call to a connection (a provider's API key, say).
    headers: BTreeMap<String, (String, String)>,
}

/// Why the HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client for connections: {0}")]
pub struct ClientError(String);

impl HttpConnections {
    /// A client for `bases` (connection name → base URL), each call bounded by `timeout`.
    pub fn new(bases: BTreeMap<String, url::Url>, timeout: Duration) -> Result<Self, ClientError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map_err(|e| ClientError(e.to_string()))?;
        Ok(Self { client, bases, headers: BTreeMap::new() })
    }

    /// Sends `headers[connection]` (name, value) with every call to that connection.
    #[must_use]
    pub fn with_headers(mut self, headers: BTreeMap<String, (String, String)>) -> Self {
        self.headers = headers;
        self
    }

    /// `builder` with the connection's configured header, if it has one.
    fn with_header(
        &self,
        connection: &str,
        builder: reqwest::RequestBuilder,
    ) -> reqwest::RequestBuilder {
        match self.headers.get(connection) {
            Some((name, value)) => builder.header(name.as_str(), value.as_str()),
            None => builder,
        }
    }
}

#[async_trait]
impl Connections for HttpConnections {
    async fn call(
        &self,
        request: ConnectionRequest,
    ) -> Result<ConnectionResponse, ConnectionError> {
        let base = self
            .bases
            .get(&request.connection)
            .ok_or_else(|| ConnectionError::Unknown(request.connection.clone()))?;
        let url = joined(&request.connection, base, &request.path)?;
        let mut builder = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(request.body.to_string());
        if let Some(key) = &request.idempotency_key {
            builder = builder.header("idempotency-key", key);
        }
        answer(&request.connection, self.with_header(&request.connection, builder)).await
    }

    async fn get(
        &self,
        connection: &str,
        path: &str,
    ) -> Result<ConnectionResponse, ConnectionError> {
        let base = self
            .bases
            .get(connection)
            .ok_or_else(|| ConnectionError::Unknown(connection.to_owned()))?;
        let url = joined(connection, base, path)?;
        answer(connection, self.with_header(connection, self.client.get(url))).await
    }
}

/// The most of an answer's body that is read.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// `path` under `base`: empty, or starting with exactly one `/`, and the result still on the
/// base's scheme, host and port (`@evil.example`, `//evil.example` or a scheme are refused).
fn joined(connection: &str, base: &url::Url, path: &str) -> Result<url::Url, ConnectionError> {
    let refused =
        || ConnectionError::BadPath { connection: connection.to_owned(), path: path.to_owned() };
    if !(path.is_empty() || (path.starts_with('/') && !path.starts_with("//"))) {
        return Err(refused());
    }
    let url = url::Url::parse(&format!("{}{path}", base.as_str().trim_end_matches('/')))
        .map_err(|_| refused())?;
    let same = url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default();
    if same { Ok(url) } else { Err(refused()) }
}

/// What went wrong sending or reading, without the URL.
fn reason(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else {
        let mut text = e.to_string();
        if let Some(url) = e.url() {
            text = text.replace(url.as_str(), "(the connection's URL)");
        }
        text
    }
}

/// Sends `builder`'s request: a 2xx answer's JSON body (read up to [`MAX_ANSWER_BYTES`]), or
/// why not.
async fn answer(
    connection: &str,
    builder: reqwest::RequestBuilder,
) -> Result<ConnectionResponse, ConnectionError> {
    let unreachable =
        |reason: String| ConnectionError::Unreachable { connection: connection.to_owned(), reason };
    let mut response = builder.send().await.map_err(|e| unreachable(reason(&e)))?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(ConnectionError::Status { connection: connection.to_owned(), status });
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| unreachable(reason(&e)))? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(unreachable(format!("the answer is over {MAX_ANSWER_BYTES} bytes")));
        }
        bytes.extend_from_slice(&chunk);
    }
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(ConnectionResponse { status, body })
}
