//! The commit path: one action, one transaction, with its events, deliveries and idempotency
//! record.

use chrono::{DateTime, Utc};
use serde_json::Value;

use async_trait::async_trait;
use jadpo_application::{ActionOutput, Emitted, HandlerContext, HandlerError, RunServices};
use jadpo_core::id::new_id;
use jadpo_core::model::delivery::{NewDelivery, NewEvent, QueuedDelivery, StoredResponse};
use jadpo_core::model::principal::Principal;
use jadpo_core::model::webhook::Receipt;
use jadpo_core::{Store, StoreError, Transaction};

use crate::context::Engine;
pub use crate::digest::request_digest;
use crate::relay::enqueue_now;
use crate::steps::{Interrupt, OpenError, Opener, Run, Runner, action_run_key};

/// One request to run an action.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    pub action: String,
    /// The request's JSON body.
    pub input: Value,
    /// Who is calling (the service key's service): the idempotency scope.
    pub caller: String,
    /// The principal the request acts for, as the action sees it (`None`: a request open to
    /// anyone that carried no credential, or the runtime itself).
    pub principal: Option<Principal>,
    /// The `Idempotency-Key` header, if any.
    pub idempotency_key: Option<String>,
    pub request_digest: String,
    /// W3C trace context of the request.
    pub traceparent: Option<String>,
    /// W3C `tracestate`.
    pub tracestate: Option<String>,
    /// The request's id (for logs and the outbox).
    pub request_id: String,
}

/// What the caller is answered, and what to put on the queue now.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitOutcome {
    /// HTTP status.
    pub status: u16,
    /// JSON body.
    pub body: Value,
    /// Whether this is a stored response replayed for a repeated idempotency key.
    pub replayed: bool,
    /// The store holding the new deliveries, and the deliveries to enqueue at once.
    pub deliveries: Vec<QueuedDelivery>,
    /// The action's store.
    pub store: String,
}

/// Why an action did not commit. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// No action has that name (`404`).
    #[error("no action named {0:?}")]
    UnknownAction(String),
    /// The idempotency key was used for a different request (`422`).
    #[error("Idempotency-Key {0:?} was already used with a different request")]
    KeyReused(String),
    /// The action rejected its input (`4xx`).
    #[error("{title}: {detail}")]
    Rejected {
        /// HTTP status.
        status: u16,
        title: String,
        detail: String,
    },
    /// The action emitted an event the application does not declare (`500`, a bug).
    #[error("action {action:?} emitted event {event:?}, which is not declared")]
    UndeclaredEvent { action: String, event: String },
    /// A chain of events went deeper than the limit.
    #[error(
        "event chain depth {depth} exceeds the limit of {limit}; the event {event:?} was refused"
    )]
    ChainTooDeep { event: String, depth: u32, limit: u32 },
    /// The action failed (`500`).
    #[error("action failed: {0}")]
    Failed(String),
    /// The action could not finish in the time the invocation had left (`503`, try again).
    #[error("action not finished: {0}")]
    Later(String),
    /// The queue holds more than the admission limit: nothing was run or written (`503`, try
    /// again once the delivery side has caught up).
    #[error(
        "the delivery queue holds {backlog} messages, at or above the limit of {limit} \
         (JADPO_MAX_BACKLOG): try again later"
    )]
    Overloaded { backlog: u64, limit: u64 },
    /// The database failed (`503` when retryable, `409` on a conflict, else `500`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Refuses the commit while the queue holds at least the admission limit: accepting work
/// faster than it can be delivered only grows a backlog that ages past the queue's redelivery
/// window and retention. A queue that cannot tell its depth, or cannot be read now, admits.
pub(crate) async fn admit(engine: &Engine) -> Result<(), CommitError> {
    let limit = engine.settings.max_backlog;
    if limit == 0 {
        return Ok(());
    }
    match engine.queue.backlog_recent().await {
        Ok(Some(backlog)) if backlog >= limit => Err(CommitError::Overloaded { backlog, limit }),
        Ok(_) => Ok(()),
        Err(e) => {
            tracing::debug!(error = %e, "queue depth unknown; the commit is admitted");
            Ok(())
        }
    }
}

/// The runtime's rows of an action's run: its transaction opened with the idempotency claim and
/// the audit context, and written at the end with the events, the stored response and the step
/// record's finish.
struct ActionRows<'a> {
    engine: &'a Engine,
    store: &'a dyn Store,
    request: &'a CommitRequest,
    audited: bool,
    /// A webhook's receipt, claimed first in the transaction: a duplicate answers the receipt.
    receipt: Option<&'a Receipt>,
}

#[async_trait]
impl Opener for ActionRows<'_> {
    async fn open(&self) -> Result<Box<dyn Transaction>, OpenError> {
        let (engine, store, request) = (self.engine, self.store, self.request);
        let now = engine.clock.now();
        let mut tx = store.begin().await?;
        if let Some(key) = &request.idempotency_key {
            let expires = jadpo_core::clock::after(now, engine.settings.idempotency_retention);
            let digest = &request.request_digest;
            let claim = store
                .idempotency_claim(tx.as_mut(), &request.caller, key, digest, now, expires)
                .await;
            match claim {
                Ok(None) => {}
                Ok(Some(stored)) => {
                    tx.rollback().await?;
                    return Err(OpenError::Interrupt(if stored.request_digest == *digest {
                        Interrupt::Replay(stored)
                    } else {
                        Interrupt::KeyReused(key.clone())
                    }));
                }
                Err(e) => {
                    let _ = tx.rollback().await;
                    return Err(e.into());
                }
            }
        }
        if let Some(receipt) = self.receipt {
            match store.receipt_claim(tx.as_mut(), receipt).await {
                Ok(None) => {}
                Ok(Some(kept)) => {
                    tx.rollback().await?;
                    let body = received(&kept).to_string();
                    let digest = request.request_digest.clone();
                    let stored = StoredResponse { request_digest: digest, status: 200, body };
                    return Err(OpenError::Interrupt(Interrupt::Replay(stored)));
                }
                Err(e) => {
                    let _ = tx.rollback().await;
                    return Err(e.into());
                }
            }
        }
        crate::fault!("commit.after_claim");
        if self.audited {
            // The acting principal (`service:web`, `user:<id>`); the caller string for the
            // runtime's own requests, which have none.
            let actor =
                request.principal.as_ref().map_or_else(|| request.caller.clone(), Principal::owner);
            let who = jadpo_core::model::audit::AuditContext {
                actor: &actor,
                action: &request.action,
                request_id: Some(&request.request_id),
                trace: request.traceparent.as_deref(),
                now,
            };
            store.audit_set_context(tx.as_mut(), &who).await?;
        }
        Ok(tx)
    }
}

fn handler_error(e: HandlerError) -> CommitError {
    match e {
        HandlerError::Rejected { status, title, detail } => {
            CommitError::Rejected { status, title, detail }
        }
        HandlerError::Store(e) => CommitError::Store(e),
        HandlerError::Failed(why) => CommitError::Failed(why),
        HandlerError::Later(why) => CommitError::Later(why),
    }
}

fn interrupted(interrupt: Interrupt, store: &str) -> Result<CommitOutcome, CommitError> {
    match interrupt {
        Interrupt::Replay(stored) => {
            let body = serde_json::from_str(&stored.body).unwrap_or(Value::String(stored.body));
            Ok(CommitOutcome {
                status: stored.status,
                body,
                replayed: true,
                deliveries: Vec::new(),
                store: store.to_owned(),
            })
        }
        Interrupt::KeyReused(key) => Err(CommitError::KeyReused(key)),
        Interrupt::AlreadyHandled => Err(CommitError::Failed("not a subscriber".to_owned())),
    }
}

/// The use case an edge calls: runs `request` ([`commit_unsent`]), then puts its new deliveries
/// on the queue at once. What the queue refuses is left to the relay's sweep, which sends every
/// delivery committed and not marked sent: an edge never sends after a commit itself.
pub async fn commit(engine: &Engine, request: CommitRequest) -> Result<CommitOutcome, CommitError> {
    let outcome = commit_unsent(engine, request).await?;
    enqueue_now(engine, &outcome.store, &outcome.deliveries).await;
    Ok(outcome)
}

/// Runs `request`: the action's calls first (recorded steps, outside any transaction), then its
/// writes in one transaction on its store with the idempotency record and the events. Its
/// deliveries are left unsent (in `deliveries`, for the relay's sweep): for a caller that sends
/// them its own way, as the benches and the tests of the relay do.
pub async fn commit_unsent(
    engine: &Engine,
    request: CommitRequest,
) -> Result<CommitOutcome, CommitError> {
    run_commit(engine, request, None).await
}

/// Runs `request` as [`commit`] does, with a webhook's `receipt` claimed first in its
/// transaction: a receipt already kept for its key answers `200` with that receipt
/// ([`received`]) and runs nothing.
pub(crate) async fn commit_received(
    engine: &Engine,
    request: CommitRequest,
    receipt: &Receipt,
) -> Result<CommitOutcome, CommitError> {
    let outcome = run_commit(engine, request, Some(receipt)).await?;
    enqueue_now(engine, &outcome.store, &outcome.deliveries).await;
    Ok(outcome)
}

/// What a webhook's sender is answered about its receipt.
pub(crate) fn received(receipt: &Receipt) -> Value {
    serde_json::json!({
        "receipt": receipt.id,
        "source": receipt.source,
        "event_key": receipt.event_key,
        "received_at": receipt.received_at.to_rfc3339(),
    })
}

async fn run_commit(
    engine: &Engine,
    request: CommitRequest,
    receipt: Option<&Receipt>,
) -> Result<CommitOutcome, CommitError> {
    let spec = engine
        .app
        .action(&request.action)
        .ok_or_else(|| CommitError::UnknownAction(request.action.clone()))?;
    let store = engine.store(&spec.store)?;
    admit(engine).await?;
    let now = engine.clock.now();
    let audited = engine.app.has_audited(&spec.store);
    let rows = ActionRows { engine, store: store.as_ref(), request: &request, audited, receipt };
    let run_key =
        action_run_key(&request.caller, request.idempotency_key.as_deref(), &request.request_id);
    let mut run = Run::new(engine, store.as_ref(), &rows, Runner::Action, run_key, &spec.name, 1)
        .with_mode(spec.steps);
    let mut ctx = HandlerContext::new(&mut run, now)
        .with_flags(engine.flag_access(&spec.store))
        .with_principal(request.principal.as_ref())
        .with_files(engine.file_access(&spec.store, store.as_ref()));
    let output = spec.handler.run(&mut ctx, request.input.clone()).await;
    let (tx, emitted) = ctx.into_parts();
    if let Some(interrupt) = run.interrupt.take() {
        if let Some(tx) = tx {
            tx.rollback().await?;
        }
        return interrupted(interrupt, &spec.store);
    }
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            if let Some(tx) = tx {
                let _ = tx.rollback().await;
            }
            run.release().await;
            return Err(handler_error(e));
        }
    };
    crate::fault!("commit.after_action");
    let mut tx = match tx {
        Some(tx) => tx,
        None => match run.begin_writes().await {
            Ok(tx) => tx,
            Err(e) => {
                return match run.interrupt.take() {
                    Some(interrupt) => interrupted(interrupt, &spec.store),
                    None => Err(handler_error(e)),
                };
            }
        },
    };
    match rows.write(tx.as_mut(), &run, &output, &emitted, now).await {
        Ok(deliveries) => {
            if let Err(e) = tx.commit().await {
                // Not committed: the run's held answer is written as it is given up.
                run.release().await;
                return Err(e.into());
            }
            crate::fault!("commit.after_commit");
            Ok(CommitOutcome {
                status: output.status,
                body: output.body,
                replayed: false,
                deliveries,
                store: spec.store.clone(),
            })
        }
        Err(e) => {
            let _ = tx.rollback().await;
            run.release().await;
            Err(e)
        }
    }
}

impl ActionRows<'_> {
    /// Writes the run's rows in its transaction: the outbox and deliveries, the stored response,
    /// the step record finished.
    async fn write(
        &self,
        tx: &mut dyn Transaction,
        run: &Run<'_>,
        output: &ActionOutput,
        emitted: &[Emitted],
        now: DateTime<Utc>,
    ) -> Result<Vec<QueuedDelivery>, CommitError> {
        let (engine, store, request) = (self.engine, self.store, self.request);
        let origin = Origin {
            source: &request.action,
            depth: 0,
            request_id: Some(&request.request_id),
            traceparent: request.traceparent.as_deref(),
            tracestate: request.tracestate.as_deref(),
        };
        let (_, deliveries) = write_emitted(engine, store, tx, emitted, &origin, now).await?;
        crate::fault!("commit.after_outbox");
        if let Some(key) = &request.idempotency_key {
            let body = output.body.to_string();
            store
                .idempotency_store_response(tx, &request.caller, key, output.status, &body)
                .await?;
        }
        run.finish(tx).await.map_err(handler_error)?;
        if run.answers_with_finish() {
            crate::fault!("steps.after_answer");
        }
        if self.audited {
            store.audit_clear_context(tx).await?;
        }
        crate::fault!("commit.before_commit");
        Ok(deliveries)
    }
}

/// Where emitted events come from.
pub(crate) struct Origin<'a> {
    pub(crate) source: &'a str,
    pub(crate) depth: u32,
    pub(crate) request_id: Option<&'a str>,
    pub(crate) traceparent: Option<&'a str>,
    pub(crate) tracestate: Option<&'a str>,
}

/// Writes the outbox row and deliveries of each emitted event inside `tx`; returns the outbox
/// rows' ids, in order, and the deliveries to put on the queue after commit.
pub(crate) async fn write_emitted(
    engine: &Engine,
    store: &dyn jadpo_core::ports::PipelineStore,
    tx: &mut dyn Transaction,
    emitted: &[Emitted],
    origin: &Origin<'_>,
    now: DateTime<Utc>,
) -> Result<(Vec<String>, Vec<QueuedDelivery>), CommitError> {
    let mut queued = Vec::new();
    let mut outbox_ids = Vec::with_capacity(emitted.len());
    for e in emitted {
        if !engine.app.has_event(&e.event_type) {
            return Err(CommitError::UndeclaredEvent {
                action: origin.source.to_owned(),
                event: e.event_type.clone(),
            });
        }
        if origin.depth > engine.settings.max_chain_depth {
            return Err(CommitError::ChainTooDeep {
                event: e.event_type.clone(),
                depth: origin.depth,
                limit: engine.settings.max_chain_depth,
            });
        }
        let event = NewEvent {
            id: new_id(engine.clock.as_ref()).to_string(),
            event_type: e.event_type.clone(),
            payload: e.payload.clone(),
            traceparent: origin.traceparent.map(str::to_owned),
            tracestate: origin.tracestate.map(str::to_owned),
            chain_depth: origin.depth,
            source: origin.source.to_owned(),
            request_id: origin.request_id.map(str::to_owned),
            created_at: now,
        };
        let deliveries: Vec<NewDelivery> = engine
            .app
            .subscribers_of(&e.event_type)
            .map(|s| NewDelivery {
                id: new_id(engine.clock.as_ref()).to_string(),
                outbox_id: event.id.clone(),
                subscriber: s.name.clone(),
                created_at: now,
            })
            .collect();
        store.outbox_append(tx, &event, &deliveries).await?;
        outbox_ids.push(event.id.clone());
        queued.extend(
            deliveries
                .into_iter()
                .map(|d| QueuedDelivery { id: d.id, traceparent: event.traceparent.clone() }),
        );
    }
    Ok((outbox_ids, queued))
}
