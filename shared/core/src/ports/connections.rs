//! Connections: the external HTTP services subscribers (and actions) call.
//!
//! Core only names the port; the runtime implements it over an HTTP client. A call made while
//! handling a delivery carries the delivery id as its `Idempotency-Key`, so a redelivered event
//! does not repeat its effect at a provider that deduplicates by key.

use async_trait::async_trait;
use serde_json::Value;

/// One call to a connection.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionRequest {
    /// The declared connection's name (`mailer`).
    pub connection: String,
    /// Path appended to the connection's base URL (may be empty).
    pub path: String,
    /// JSON body, sent with `POST`.
    pub body: Value,
    /// The `Idempotency-Key` header to send.
    pub idempotency_key: Option<String>,
}

/// A connection's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionResponse {
    /// HTTP status.
    pub status: u16,
    /// JSON body (`null` when empty or not JSON).
    pub body: Value,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// No connection has that name.
    #[error("no connection named {0:?} is declared")]
    Unknown(String),
    /// The service could not be reached or timed out.
    #[error("connection {connection:?} is unreachable: {reason}")]
    Unreachable {
        connection: String,
        /// Why.
        reason: String,
    },
    /// The service answered with an error status (or a redirect, which is not followed).
    #[error("connection {connection:?} answered {status}")]
    Status { connection: String, status: u16 },
    /// The request was refused before it was sent: a path that would leave the connection's
    /// base URL (a bug in the caller; retrying cannot help).
    #[error(
        "connection {connection:?} refused path {path:?}: a path starts with one `/` and stays on the connection's host"
    )]
    BadPath { connection: String, path: String },
}

/// The port through which handlers call connections.
#[async_trait]
pub trait Connections: Send + Sync {
    /// Sends `request`; a 2xx answer is `Ok`, any other status an error.
    async fn call(&self, request: ConnectionRequest)
    -> Result<ConnectionResponse, ConnectionError>;

    /// Reads `path` of connection `connection` (`GET`, a JSON answer): an issuer's key set, say.
    async fn get(
        &self,
        connection: &str,
        _path: &str,
    ) -> Result<ConnectionResponse, ConnectionError> {
        Err(ConnectionError::Unknown(connection.to_owned()))
    }
}

/// Connections for an application that declares none: every call is an unknown connection.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoConnections;

#[async_trait]
impl Connections for NoConnections {
    async fn call(
        &self,
        request: ConnectionRequest,
    ) -> Result<ConnectionResponse, ConnectionError> {
        Err(ConnectionError::Unknown(request.connection))
    }
}
