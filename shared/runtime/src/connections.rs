//! Connections over HTTP (`reqwest` on rustls with the ring provider, the one TLS stack).
//!
//! Each declared connection has a base URL (`JADPO_CONNECTION_<NAME>_URL`; locally the
//! process's own sink at `/sink/<name>`). Calls are `POST` with a JSON body, a timeout, and the
//! `Idempotency-Key` the handler context supplies.

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
            .timeout(timeout)
            .build()
            .map_err(|e| ClientError(e.to_string()))?;
        Ok(Self { client, bases })
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
        let url = format!("{}{}", base.as_str().trim_end_matches('/'), request.path);
        let mut builder = self
            .client
            .post(&url)
            .header("content-type", "application/json")
            .body(request.body.to_string());
        if let Some(key) = &request.idempotency_key {
            builder = builder.header("idempotency-key", key);
        }
        answer(&request.connection, builder).await
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
        let url = format!("{}{path}", base.as_str().trim_end_matches('/'));
        answer(connection, self.client.get(&url)).await
    }
}

/// Sends `builder`'s request: a 2xx answer's JSON body, or why not.
async fn answer(
    connection: &str,
    builder: reqwest::RequestBuilder,
) -> Result<ConnectionResponse, ConnectionError> {
    let unreachable =
        |reason: String| ConnectionError::Unreachable { connection: connection.to_owned(), reason };
    let response = builder.send().await.map_err(|e| unreachable(e.to_string()))?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(ConnectionError::Status { connection: connection.to_owned(), status });
    }
    let bytes = response.bytes().await.map_err(|e| unreachable(e.to_string()))?;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(ConnectionResponse { status, body })
}
