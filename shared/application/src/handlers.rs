//! The application's code as the runtime calls it: actions and subscribers.
//!
//! A handler's run has two phases. First it may call connections; then it writes. Its database
//! transaction opens at its first [`tx`](HandlerContext::tx) (or when it returns), and a call
//! after that is refused: a call never runs while the transaction holds row locks (or SQLite's
//! one write lock) for as long as a provider takes to answer. Everything the handler writes
//! through the transaction, and every event it [`emit`](HandlerContext::emit)s, commits together
//! with the runtime's own rows (outbox, deliveries, idempotency record, handled-delivery record,
//! the run's step record).
//!
//! Each changing call is a *step* the runtime records before sending it, with its own
//! idempotency key, so that a retried run replays answered steps instead of calling again
//! (see `docs/step-records.md`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use jadpo_core::error::StoreError;
use jadpo_core::model::event::{Emitted, Event};
use jadpo_core::model::flags::Rollout;
use jadpo_core::model::principal::Principal;
use jadpo_core::ports::{ConnectionError, ConnectionRequest, Connections};
use jadpo_core::ports::{FileStore, FlagStore, SignInStore};
use jadpo_core::transaction::{On, Transaction};

mod uploads;

pub use uploads::{UploadRefused, check_upload};

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

/// What kind of call a handler makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A changing call: a recorded step with its own key, replayed on a retry of the run.
    Changing,
    /// A call declared read-only: no record and no key; made again on a retry.
    ReadOnly,
    /// A changing call meant to happen again on every attempt (a mail carrying a secret made
    /// fresh for that attempt): no record; its key is the run's key and the attempt.
    EachAttempt,
}

/// One call a handler asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The declared connection.
    pub connection: String,
    /// Path appended to the connection's base URL (may be empty).
    pub path: String,
    /// JSON body, sent with `POST`.
    pub body: Value,
    pub kind: CallKind,
}

impl Call {
    /// A call of `kind` to connection `connection` at `path` with `body`.
    pub fn new(connection: &str, path: &str, body: Value, kind: CallKind) -> Self {
        Self { connection: connection.to_owned(), path: path.to_owned(), body, kind }
    }
}

/// What the runtime does for one run of a handler: opens its transaction when it first writes,
/// and makes its calls (the engine implements it; its changing calls are recorded steps).
#[async_trait]
pub trait RunServices: Send {
    /// Opens the run's transaction with the runtime's first rows in it.
    async fn begin_writes(&mut self) -> Result<Box<dyn Transaction>, HandlerError>;

    /// Makes `call` (outside any transaction) and returns the answer's body.
    async fn call(&mut self, call: Call) -> Result<Value, HandlerError>;

    /// The idempotency key the run's next changing call will carry, if it can have one.
    fn next_call_key(&self) -> Option<String>;
}

/// What an action or subscriber sees of its run.
pub struct HandlerContext<'t> {
    run: &'t mut dyn RunServices,
    tx: Option<Box<dyn Transaction>>,
    emitted: Vec<Emitted>,
    now: DateTime<Utc>,
    flags: Option<FlagAccess<'t>>,
    flag_cache: std::collections::BTreeMap<String, Rollout>,
    principal: Option<&'t Principal>,
    sign_in: Option<&'t dyn SignInStore>,
    files: Option<&'t dyn FileStore>,
}

/// Where a handler's flags are read: the flags store, and whether it is the handler's own
/// store (then flags are read inside the handler's transaction once it is open).
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
    /// A context over `run` (the engine builds one per action or subscriber run).
    pub fn new(run: &'t mut dyn RunServices, now: DateTime<Utc>) -> Self {
        Self {
            run,
            tx: None,
            emitted: Vec::new(),
            now,
            flags: None,
            flag_cache: std::collections::BTreeMap::new(),
            principal: None,
            sign_in: None,
            files: None,
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

    /// Lets the runtime's own sign-in mail subscriber reach its store's sign-in requests.
    pub fn with_sign_in(mut self, store: Option<&'t dyn SignInStore>) -> Self {
        self.sign_in = store;
        self
    }

    /// The store of this handler's sign-in requests, for the runtime's own sign-in mail.
    pub fn sign_in_store(&self) -> Option<&'t dyn SignInStore> {
        self.sign_in
    }

    /// Lets the handler check the files a request names ([`HandlerContext::uploaded_file`]):
    /// the file counts of its store, when the application keeps files there.
    pub fn with_files(mut self, store: Option<&'t dyn FileStore>) -> Self {
        self.files = store;
        self
    }

    /// Lets the handler read flags.
    pub fn with_flags(mut self, flags: Option<FlagAccess<'t>>) -> Self {
        self.flags = flags;
        self
    }

    /// Whether flag `name` is on for `subject` (a user id, an account: what a percentage
    /// rollout buckets by). The first read of a flag is remembered for the rest of the run, so
    /// the handler sees one value throughout. An undeclared flag is an error.
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
        let on = match (&mut self.tx, access.same_store) {
            (Some(tx), true) => On::Tx(tx.as_mut()),
            _ => On::Own,
        };
        let stored = access.store.flag_read(on, name).await?;
        let rollout = stored.map_or(default, |f| f.rollout);
        self.flag_cache.insert(name.to_owned(), rollout);
        Ok(rollout.enabled_for(name, subject))
    }

    async fn make(&mut self, call: Call) -> Result<Value, HandlerError> {
        if self.tx.is_some() {
            return Err(HandlerError::Failed(format!(
                "a call to connection {:?} after the first write was refused: a handler makes \
                 its calls before it writes, so no transaction is open while a provider answers",
                call.connection
            )));
        }
        self.run.call(call).await
    }

    /// Makes a changing call to connection `name` (POST `body` to its base URL plus `path`) as a
    /// recorded step with its own `Idempotency-Key` (see [`next_call_key`](Self::next_call_key)).
    /// On a retry of the run, an answered step returns its recorded answer without calling, and
    /// a step asked for a different request stops the run. An error status or an unreachable
    /// service fails the handler, so a subscriber's delivery is retried. Calls come before the
    /// first write: a call after [`tx`](Self::tx) is refused.
    pub async fn call(
        &mut self,
        name: &str,
        path: &str,
        body: Value,
    ) -> Result<Value, HandlerError> {
        self.make(Call::new(name, path, body, CallKind::Changing)).await
    }

    /// Makes a call declared read-only (it changes nothing at the provider): no record, no
    /// `Idempotency-Key`, made again on each attempt. Like every call, before the first write.
    pub async fn call_read_only(
        &mut self,
        name: &str,
        path: &str,
        body: Value,
    ) -> Result<Value, HandlerError> {
        self.make(Call::new(name, path, body, CallKind::ReadOnly)).await
    }

    /// Makes a changing call that is meant to happen again on every attempt of the run (a mail
    /// carrying a secret made fresh for that attempt): no record; its `Idempotency-Key` is the
    /// run's key and the attempt, so a provider deduplicates within one attempt only.
    pub async fn call_each_attempt(
        &mut self,
        name: &str,
        path: &str,
        body: Value,
    ) -> Result<Value, HandlerError> {
        self.make(Call::new(name, path, body, CallKind::EachAttempt)).await
    }

    /// The `Idempotency-Key` the next changing [`call`](Self::call) will carry: derived from the
    /// run's key (the delivery id in a subscriber; the caller and its `Idempotency-Key` in an
    /// action) and the step's place, the same on every retry of the run.
    pub fn next_call_key(&self) -> Option<String> {
        self.run.next_call_key()
    }

    /// The run's open transaction, opened at the first use: write the application's own rows
    /// through it. From then on the handler makes no more calls.
    pub async fn tx(&mut self) -> Result<&mut dyn Transaction, HandlerError> {
        let tx = match self.tx.take() {
            Some(tx) => tx,
            None => self.run.begin_writes().await?,
        };
        Ok(self.tx.insert(tx).as_mut())
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

    /// The transaction if the handler opened one, and the events it emitted, in order, for the
    /// engine to finish the run.
    pub fn into_parts(self) -> (Option<Box<dyn Transaction>>, Vec<Emitted>) {
        (self.tx, self.emitted)
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
    /// Work not started because it could not finish in the time the invocation has left (a
    /// deployed function near its deadline); trying again later can succeed. An action answers
    /// it as `503` with `Retry-After`; a subscriber's delivery is retried.
    #[error("{0}")]
    Later(String),
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
    /// Handles `event`; calls first, then writes through `ctx.tx()`.
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
