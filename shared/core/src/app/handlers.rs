//! The application's code as the runtime calls it: actions and subscribers.
//!
//! Both get a context wrapping the open [`Transaction`] of their store: everything they write
//! through it, and every event they [`emit`](ActionContext::emit), commits together with the
//! runtime's own rows (outbox, deliveries, idempotency record, handled-delivery record).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::StoreError;
use crate::model::event::{Emitted, Event};
use crate::model::flags::Rollout;
use crate::model::principal::Principal;
use crate::ports::FlagStore;
use crate::ports::SignInStore;
use crate::ports::{ConnectionError, ConnectionRequest, Connections};
use crate::transaction::{On, Transaction};

/// Calls connection `name`; an error status or an unreachable service fails the handler.
async fn call_connection(
    connections: &dyn Connections,
    idempotency_key: Option<String>,
    name: &str,
    path: &str,
    body: Value,
) -> Result<Value, HandlerError> {
    let request = ConnectionRequest {
        connection: name.to_owned(),
        path: path.to_owned(),
        body,
        idempotency_key,
    };
    connections
        .call(request)
        .await
        .map(|response| response.body)
        .map_err(|e: ConnectionError| HandlerError::Failed(e.to_string()))
}

/// What an action or subscriber sees of its transaction.
pub struct HandlerContext<'t> {
    tx: &'t mut dyn Transaction,
    connections: &'t dyn Connections,
    emitted: Vec<Emitted>,
    now: DateTime<Utc>,
    idempotency_key: Option<String>,
    connection_failed: bool,
    flags: Option<FlagAccess<'t>>,
    flag_cache: std::collections::BTreeMap<String, Rollout>,
    principal: Option<&'t Principal>,
    sign_in: Option<&'t dyn SignInStore>,
}

/// Where a handler's flags are read: the flags store, and whether it is the handler's own
/// store (then flags are read inside the handler's transaction).
#[derive(Clone, Copy)]
pub struct FlagAccess<'t> {
    /// Where the flags' declared defaults are.
    pub app: &'t super::Application,
    /// The flags store.
    pub store: &'t dyn FlagStore,
    /// Whether the flags store is the handler's own: then flags are read in its transaction.
    pub same_store: bool,
}

impl<'t> HandlerContext<'t> {
    /// A context over `tx` (the engine builds one per action or subscriber run).
    pub fn new(
        tx: &'t mut dyn Transaction,
        connections: &'t dyn Connections,
        now: DateTime<Utc>,
        idempotency_key: Option<String>,
    ) -> Self {
        Self {
            tx,
            connections,
            emitted: Vec::new(),
            now,
            idempotency_key,
            connection_failed: false,
            flags: None,
            flag_cache: std::collections::BTreeMap::new(),
            principal: None,
            sign_in: None,
        }
    }

    /// Says who the request acts for (an action's caller; none for a subscriber or a request
    /// open to anyone that carried no credential).
    pub fn with_principal(mut self, principal: Option<&'t Principal>) -> Self {
        self.principal = principal;
        self
    }

    /// Who the request acts for: a signed-in user or a service, or `None`.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal
    }

    /// Lets the runtime's own sign-in mail subscriber reach the sign-in requests of its store.
    pub fn with_sign_in(mut self, store: Option<&'t dyn SignInStore>) -> Self {
        self.sign_in = store;
        self
    }

    /// The sign-in requests of this handler's store, for the runtime's own sign-in mail.
    pub fn sign_in_store(&self) -> Option<&'t dyn SignInStore> {
        self.sign_in
    }

    /// Lets the handler read flags.
    pub fn with_flags(mut self, flags: Option<FlagAccess<'t>>) -> Self {
        self.flags = flags;
        self
    }

    /// Whether flag `name` is on for `subject` (a user id, an account: what a percentage
    /// rollout buckets by). The first read of a flag is remembered for the rest of this
    /// transaction, so the handler sees one value throughout. An undeclared flag is an error.
    pub async fn flag(&mut self, name: &str, subject: &str) -> Result<bool, HandlerError> {
        if let Some(rollout) = self.flag_cache.get(name) {
            return Ok(rollout.enabled_for(name, subject));
        }
        let Some(access) = self.flags else {
            return Err(HandlerError::Failed("flags are not available here".to_owned()));
        };
        let default = access.app.flag_default(name).ok_or_else(|| {
            HandlerError::Failed(format!("flag {name:?} is not declared by the application"))
        })?;
        let on = if access.same_store { On::Tx(&mut *self.tx) } else { On::Own };
        let stored = access.store.flag_read(on, name).await?;
        let rollout = stored.map_or(default, |f| f.rollout);
        self.flag_cache.insert(name.to_owned(), rollout);
        Ok(rollout.enabled_for(name, subject))
    }

    /// Calls the connection `name` with a JSON `body` (POST to its base URL plus `path`),
    /// sending [`idempotency_key`](Self::idempotency_key) as `Idempotency-Key`. An error status
    /// or an unreachable service fails the handler, so a subscriber's delivery is retried.
    pub async fn call(
        &mut self,
        name: &str,
        path: &str,
        body: Value,
    ) -> Result<Value, HandlerError> {
        let result = self.call_raw(name, path, body).await;
        if let Err(e) = &result {
            // The connection's own failures count for its circuit breaker; a 4xx other than 429
            // is the request's fault, not the service's.
            self.connection_failed |= match e {
                ConnectionError::Unreachable { .. } => true,
                ConnectionError::Status { status, .. } => *status >= 500 || *status == 429,
                ConnectionError::Unknown(_) | ConnectionError::BadPath { .. } => false,
            };
        }
        result.map(|response| response.body).map_err(|e| HandlerError::Failed(e.to_string()))
    }

    async fn call_raw(
        &mut self,
        name: &str,
        path: &str,
        body: Value,
    ) -> Result<crate::ports::ConnectionResponse, ConnectionError> {
        let request = ConnectionRequest {
            connection: name.to_owned(),
            path: path.to_owned(),
            body,
            idempotency_key: self.idempotency_key.clone(),
        };
        self.connections.call(request).await
    }

    /// Whether a connection call failed on the service's side (counted by its breaker).
    pub fn connection_failed(&self) -> bool {
        self.connection_failed
    }

    /// The store's open transaction: write the application's own rows through it.
    pub fn tx(&mut self) -> &mut dyn Transaction {
        self.tx
    }

    /// Emits an event; it is written to the outbox, with one delivery per subscriber, when the
    /// handler returns successfully, and discarded with the transaction otherwise.
    pub fn emit(&mut self, event_type: &str, payload: Value) {
        self.emitted.push(Emitted { event_type: event_type.to_owned(), payload });
    }

    /// The time of this request or delivery, from the runtime's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// A new time-ordered id (UUIDv7) for a row the handler writes.
    pub fn new_id(&self) -> String {
        let seconds = u64::try_from(self.now.timestamp()).unwrap_or(0);
        let ts =
            uuid::Timestamp::from_unix(uuid::NoContext, seconds, self.now.timestamp_subsec_nanos());
        uuid::Uuid::new_v7(ts).to_string()
    }

    /// The key to send to an external service so that a retried call is not repeated there:
    /// the delivery id in a subscriber, the caller's `Idempotency-Key` (if any) in an action.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The events the handler emitted, in order, for the engine to write to the outbox.
    pub fn into_emitted(self) -> Vec<Emitted> {
        self.emitted
    }
}

/// Why a handler did not succeed. Its transaction is rolled back in every case.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The input is not acceptable (an action answers it as a 4xx problem; a subscriber's
    /// delivery ends dead at once, since retrying cannot help).
    #[error("{title}: {detail}")]
    Rejected {
        /// HTTP status for an action (400, 404, 409, 422, ...).
        status: u16,
        /// Short, stable summary.
        title: String,
        /// What exactly was wrong.
        detail: String,
    },
    /// A store operation failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else (an external call failed, a bug); a subscriber's delivery is retried.
    #[error("{0}")]
    Failed(String),
}

impl HandlerError {
    /// A rejection with `status`, e.g. `HandlerError::rejected(422, "No items", "...")`.
    pub fn rejected(status: u16, title: &str, detail: impl Into<String>) -> Self {
        Self::Rejected { status, title: title.to_owned(), detail: detail.into() }
    }
}

/// An action: a request that writes, runs in one transaction on its store.
#[async_trait]
pub trait Action: Send + Sync {
    /// Runs the action on `input` (the request's JSON body) and returns the response body.
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError>;
}

/// What an action answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionOutput {
    /// HTTP status (2xx).
    pub status: u16,
    /// JSON body.
    pub body: Value,
}

impl ActionOutput {
    /// `201 Created` with `body`.
    pub fn created(body: Value) -> Self {
        Self { status: 201, body }
    }

    /// `200 OK` with `body`.
    pub fn ok(body: Value) -> Self {
        Self { status: 200, body }
    }
}

/// A subscriber: reacts to one event type by writing its store, at least once delivered and
/// exactly once in effect (its handled record commits with its writes).
#[async_trait]
pub trait Subscriber: Send + Sync {
    /// Handles `event`; writes go through `ctx.tx()`.
    async fn handle(&self, ctx: &mut HandlerContext<'_>, event: &Event)
    -> Result<(), HandlerError>;
}

/// A workflow command as its capability receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRequest {
    pub command_id: String,
    pub run_id: String,
    /// The issuing node.
    pub node_id: String,
    /// The command's payload (the run's input and the node's inputs).
    pub payload: Value,
    /// The resolved idempotency key to pass to the external provider.
    pub idempotency_key: String,
}

/// What a capability sees: the connections, with the command's idempotency key.
pub struct CapabilityContext<'t> {
    connections: &'t dyn Connections,
    idempotency_key: String,
    now: DateTime<Utc>,
}

impl<'t> CapabilityContext<'t> {
    /// A context for one command's capability (built by the engine).
    pub fn new(
        connections: &'t dyn Connections,
        idempotency_key: String,
        now: DateTime<Utc>,
    ) -> Self {
        Self { connections, idempotency_key, now }
    }

    /// The time of this attempt.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// Calls the connection `name` (POST `body` to its base URL plus `path`) with the command's
    /// resolved idempotency key as `Idempotency-Key`.
    pub async fn call(
        &mut self,
        name: &str,
        path: &str,
        body: Value,
    ) -> Result<Value, HandlerError> {
        call_connection(self.connections, Some(self.idempotency_key.clone()), name, path, body)
            .await
    }
}

/// A capability: the environmental work behind a workflow command (charge a card, reserve
/// stock). It runs outside any transaction; its result is committed as the run's next transition.
#[async_trait]
pub trait Capability: Send + Sync {
    /// Does the work; the result is stored under the node's output key.
    async fn run(
        &self,
        ctx: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError>;
}
