//! Step records, the use case: one run of an action or subscriber, its calls made outside any
//! transaction as recorded steps, and its transaction opened at the first write.
//!
//! A run takes its record at its first changing call, under a lease with a generation: a runner
//! whose lease another took over records no step and commits nothing. Each changing call is
//! recorded as sent (operation, request fingerprint, key) before it goes out, and its answer is
//! recorded sealed when it comes back. On a retry of the run, an answered step replays its
//! answer, a sent one is sent again under the same key, and a step asked for another request
//! stops the run as diverged. The run's record is marked finished inside the handler's
//! transaction, so it commits with the handler's writes.
//!
//! A step's answer is held until the run next acts outside the process: it is written with the
//! next step's sent row (one synced write for both), with the run's finish in the handler's
//! transaction (one statement for both, where the store allows), or alone when the attempt gives
//! the run up without committing. So the answers a handler saw commit with its writes or before
//! them, never after, and a step is recorded sent only after the one before it is answered; a
//! crash while an answer is held is a crash between a call and its record (the step stays sent,
//! and a retry sends it again under the same key, which the provider answers once).

mod replay;

use crate::sealing::SealingKeys;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use jadpo_application::{Call, CallKind, HandlerError, RunServices};
use jadpo_core::model::delivery::StoredResponse;
use jadpo_core::model::step::{
    RunGrant, RunStart, StepAnswered, StepMode, StepSent, StoredStep, step_key,
};
use jadpo_core::ports::ConnectionRequest;
use jadpo_core::transaction::commit_or_rollback;
use jadpo_core::{Store, StoreError, Transaction};

use crate::context::Engine;
use crate::gates::{CallGates, CallSeen};
pub use crate::settings::RunEnv;
use replay::{Next, Planned, diverged};

/// The run's key for an action: the caller and its `Idempotency-Key`, digested, so two callers'
/// keys never share a run (or a provider's key); a request without a key is its own run.
pub fn action_run_key(caller: &str, idempotency_key: Option<&str>, request_id: &str) -> String {
    match idempotency_key {
        Some(key) => {
            let mut hash = Sha256::new();
            for part in [caller, "\n", key] {
                hash.update(part.as_bytes());
            }
            let digest: String =
                hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
            format!("act-{digest}")
        }
        None => format!("req-{request_id}"),
    }
}

/// Why the engine must not finish the run as the handler left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// A subscriber's delivery was handled already (its handled record exists).
    AlreadyHandled,
    /// An action's key has a stored response: answer it.
    Replay(StoredResponse),
    /// An action's key was used with another request.
    KeyReused(String),
}

/// Why opening the run's transaction did not give one.
pub(crate) enum OpenError {
    Interrupt(Interrupt),
    Handler(HandlerError),
}

impl From<StoreError> for OpenError {
    fn from(e: StoreError) -> Self {
        Self::Handler(HandlerError::Store(e))
    }
}

/// Opens a run's transaction with the runtime's first rows (a handled record, an idempotency
/// claim, the audit context).
#[async_trait]
pub(crate) trait Opener: Send + Sync {
    async fn open(&self) -> Result<Box<dyn Transaction>, OpenError>;
}

/// Who runs: a subscriber for a delivery, or an action for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    Subscriber,
    Action,
}

/// The run's hold on its record.
struct Holding {
    generation: i64,
    steps: Vec<StoredStep>,
}

/// A step's answer not yet written: its number, its sealed answer (none in dispatch mode), when
/// it came back.
struct HeldAnswer {
    step_no: u32,
    sealed: Option<(Vec<u8>, String)>,
    at: DateTime<Utc>,
}

/// One run of a handler, as the context's [`RunServices`].
pub(crate) struct Run<'a> {
    engine: &'a Engine,
    store: &'a dyn Store,
    opener: &'a dyn Opener,
    runner: Runner,
    key: String,
    action: &'a str,
    attempt: u32,
    mode: StepMode,
    holding: Option<Holding>,
    /// The last step's answer, until the run's record is next written.
    held: Option<HeldAnswer>,
    next_step: u32,
    shape: Vec<String>,
    diverged: bool,
    /// The breakers a delivery's calls meet (none for an action's run).
    pub(crate) gates: Option<CallGates>,
    /// Set when opening the transaction found the run already done.
    pub(crate) interrupt: Option<Interrupt>,
    /// Set when the runtime's own rows (the transaction's opening, a step record) failed on the
    /// database's side: not the handler's failure, so it is not counted as an attempt.
    pub(crate) runtime_failed: Option<StoreError>,
    /// Set when another runner holds the run (a live one, or a crashed one whose lease has not
    /// ended): nothing was attempted, and the delivery waits until then without spending an
    /// attempt.
    pub(crate) held_until: Option<DateTime<Utc>>,
}

impl<'a> Run<'a> {
    /// A retryable store failure met in the runtime's own rows is kept as the runtime's; the
    /// handler sees it as a failure that stops its run.
    fn runtime_failure(&mut self, e: HandlerError) -> HandlerError {
        match e {
            HandlerError::Store(e) if e.is_retryable() => {
                let said = HandlerError::Failed(e.to_string());
                self.runtime_failed = Some(e);
                said
            }
            other => other,
        }
    }

    pub(crate) fn new(
        engine: &'a Engine,
        store: &'a dyn Store,
        opener: &'a dyn Opener,
        runner: Runner,
        key: String,
        action: &'a str,
        attempt: u32,
    ) -> Self {
        Self {
            engine,
            store,
            opener,
            runner,
            key,
            action,
            attempt,
            mode: StepMode::Recorded,
            holding: None,
            held: None,
            next_step: 0,
            shape: Vec::new(),
            diverged: false,
            gates: None,
            interrupt: None,
            runtime_failed: None,
            held_until: None,
        }
    }

    /// Each call admitted by, and noted for, the breaker of the connection it calls.
    pub(crate) fn with_gates(mut self, gates: CallGates) -> Self {
        self.gates = Some(gates);
        self
    }

    /// Keeps dispatch details only: for a handler declared to make one keyed call.
    pub(crate) fn with_mode(mut self, mode: StepMode) -> Self {
        self.mode = mode;
        self
    }

    /// Marks the run finished inside `tx` (nothing to do for a run that made no changing call),
    /// its held answer recorded with it; an error if the runner lost it, and the transaction
    /// must roll back. The answer stays held until the transaction commits: an attempt that
    /// does not commit writes it when it gives the run up ([`Run::release`]).
    pub(crate) async fn finish(&self, tx: &mut dyn Transaction) -> Result<(), HandlerError> {
        let Some(holding) = &self.holding else {
            return Ok(());
        };
        let now = self.engine.clock.now();
        let answered = self.held.as_ref().map(|held| self.answered(held));
        let finished =
            self.store.step_run_finish(tx, &self.key, holding.generation, answered.as_ref(), now);
        if finished.await? { Ok(()) } else { Err(lost(&self.key)) }
    }

    /// Whether [`Run::finish`] records a held answer with the run's finish (the
    /// `steps.after_answer` fault point then follows it, before the transaction commits).
    pub(crate) fn answers_with_finish(&self) -> bool {
        self.holding.is_some() && self.held.is_some()
    }

    /// Gives the run's lease up after a failed attempt, so the next attempt need not wait; its
    /// last step's answer is written first, so the retry replays it.
    pub(crate) async fn release(&mut self) {
        if self.holding.is_none() || self.diverged {
            return;
        }
        match self.write_held().await {
            Ok(true) => {}
            // Lost: not this runner's to release.
            Ok(false) => return,
            Err(e) => {
                // The retry then sends the step again under its key, once the lease ends.
                tracing::warn!(run = %self.key, error = %e, "could not record a step's answer");
                return;
            }
        }
        let now = self.engine.clock.now();
        if let Err(e) = self.store.step_run_release(&self.key, self.generation(), now).await {
            // The lease then ends when it expires.
            tracing::warn!(run = %self.key, error = %e, "could not release a run's lease");
        }
    }

    /// Writes the held answer alone, if any; `false` if the runner lost the run.
    async fn write_held(&mut self) -> Result<bool, StoreError> {
        let Some(held) = self.held.take() else {
            return Ok(true);
        };
        let kept = self.store.step_answered(&self.answered(&held)).await?;
        crate::fault!("steps.after_answer");
        Ok(kept)
    }

    /// The generation this runner holds the run under (0 before it holds it).
    fn generation(&self) -> i64 {
        self.holding.as_ref().map_or(0, |h| h.generation)
    }

    fn lease_until(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let until = jadpo_core::clock::after(now, self.engine.settings.steps.lease);
        self.engine.runs.deadline.map_or(until, |deadline| deadline.min(until))
    }

    /// Refuses a call that could not finish before the invocation's deadline.
    fn check_deadline(&self, call: &Call, now: DateTime<Utc>) -> Result<(), HandlerError> {
        let Some(deadline) = self.engine.runs.deadline else {
            return Ok(());
        };
        let s = &self.engine.settings.steps;
        let needed = s.call_budget.saturating_add(s.deadline_margin);
        if jadpo_core::clock::after(now, needed) > deadline {
            return Err(HandlerError::Later(format!(
                "a call to connection {:?} was not started: it could not finish before the \
                 function's deadline (try again)",
                call.connection
            )));
        }
        Ok(())
    }

    /// Takes the run at its first changing call, in a transaction left open when it is taken
    /// (its first step's record commits with it); `None` when the run was held already.
    async fn acquire(
        &mut self,
        now: DateTime<Utc>,
    ) -> Result<Option<Box<dyn Transaction>>, HandlerError> {
        if self.holding.is_some() {
            return Ok(None);
        }
        let start = self.run_start(now);
        let mut tx = self.store.begin().await?;
        let grant = match self.store.step_run_acquire_in(tx.as_mut(), &start).await {
            Ok(RunGrant::Acquired { generation, steps, .. }) => {
                self.holding = Some(Holding { generation, steps });
                return Ok(Some(tx));
            }
            Ok(refused) => refused,
            Err(e) => {
                let _ = tx.rollback().await;
                return Err(e.into());
            }
        };
        // Refused: nothing was written; ended before anything else opens a transaction.
        tx.commit().await?;
        match grant {
            RunGrant::Acquired { .. } => {
                Err(HandlerError::Failed("a run taken was answered as refused".to_owned()))
            }
            RunGrant::Held { until } => Err(match self.runner {
                Runner::Action => HandlerError::rejected(
                    409,
                    "Request in progress",
                    "a request with this Idempotency-Key is still running; retry it later",
                ),
                Runner::Subscriber => {
                    self.held_until = Some(until);
                    HandlerError::Failed(format!(
                        "another runner holds this run until {until}; deferred until then"
                    ))
                }
            }),
            RunGrant::Finished => {
                // Its writes committed: opening the transaction finds its handled record or
                // stored response, which the engine answers instead.
                match self.opener.open().await {
                    Err(OpenError::Interrupt(i)) => {
                        self.interrupt = Some(i);
                        Err(HandlerError::Failed("the run has finished already".to_owned()))
                    }
                    Err(OpenError::Handler(e)) => Err(e),
                    Ok(tx) => {
                        let _ = tx.rollback().await;
                        Err(HandlerError::rejected(
                            409,
                            "Run finished",
                            "this run finished earlier, but its record of what it answered has \
                             expired; it is not run again",
                        ))
                    }
                }
            }
            RunGrant::Diverged { reason } => {
                self.diverged = true;
                Err(diverged(&reason))
            }
        }
    }

    fn sealing(&self) -> Result<&SealingKeys, HandlerError> {
        self.engine.runs.sealing.as_deref().ok_or_else(|| {
            HandlerError::Failed(
                "no sealing keys are configured (JADPO_SEALING_KEYS): a changing call cannot \
                 record its answer"
                    .to_owned(),
            )
        })
    }

    async fn send(&mut self, call: Call, key: Option<String>) -> Result<Value, HandlerError> {
        if let Some(gates) = &mut self.gates {
            gates.before_call(self.engine, &call.connection).await?;
        }
        let connection = call.connection.clone();
        let request = ConnectionRequest {
            connection: call.connection,
            path: call.path,
            body: call.body,
            idempotency_key: key,
        };
        let answered = self.engine.connections.call(request).await;
        if let Some(gates) = &mut self.gates {
            gates.note(&connection, CallSeen::of(&answered));
        }
        answered.map(|r| r.body).map_err(|e| HandlerError::Failed(e.to_string()))
    }

    /// One changing call: planned against the run's record, then replayed, or recorded as
    /// sent, sent and its answer recorded. A run's first call takes the run in the same
    /// transaction that records the step sent (one synced write for both); a call that sends
    /// nothing commits the taking alone.
    async fn step(&mut self, call: Call) -> Result<Value, HandlerError> {
        let now = self.engine.clock.now();
        let fresh = match self.holding {
            None => self.start_sending(&call, now).await?,
            Some(_) => None,
        };
        let next = match fresh {
            Some(next) => next,
            None => self.plan_and_record(&call, now).await?,
        };
        let planned = match next {
            Next::Send(planned) => planned,
            Next::Answered(answer) => return answer,
        };
        crate::fault!("steps.before_call");
        let answer = self.send(call, Some(planned.key)).await?;
        crate::fault!("steps.after_call");
        self.held =
            Some(self.hold_answer(planned.step_no, planned.fingerprint.as_deref(), &answer)?);
        Ok(answer)
    }

    /// A run's first call when its record may not exist yet: planned as a new run's first step,
    /// and the record created with that step sent, in one statement where the store allows;
    /// `None`, with nothing planned or written, when the record exists (it is then acquired).
    async fn start_sending(
        &mut self,
        call: &Call,
        now: DateTime<Utc>,
    ) -> Result<Option<Next>, HandlerError> {
        let planned = match self.plan(call, now) {
            Ok(planned) => planned,
            Err(early) => return Ok(Some(Next::Answered(self.answer_early(early).await))),
        };
        let shape = self.shape_json();
        let start = self.run_start(now);
        let sent = self.sent(&planned, &shape, now);
        crate::fault!("steps.before_sent");
        match self.store.step_run_start_sending(&start, &sent).await? {
            Some(generation) => {
                self.holding = Some(Holding { generation, steps: Vec::new() });
                Ok(Some(Next::Send(planned)))
            }
            None => {
                self.next_step -= 1;
                self.shape.pop();
                Ok(None)
            }
        }
    }

    /// Takes the run (if this runner does not hold it yet), plans the step against its record
    /// and records it sent; or answers a step that sends nothing.
    async fn plan_and_record(
        &mut self,
        call: &Call,
        now: DateTime<Utc>,
    ) -> Result<Next, HandlerError> {
        let acquired = self.acquire(now).await?;
        let planned = match self.plan(call, now) {
            Ok(planned) => planned,
            Err(early) => {
                commit_acquired(acquired).await?;
                return Ok(Next::Answered(self.answer_early(early).await));
            }
        };
        crate::fault!("steps.before_sent");
        let held = self.held.take();
        let shape = self.shape_json();
        let sent = self.sent(&planned, &shape, now);
        if !self.record_sent(acquired, held, &sent).await? {
            return Err(lost(&self.key));
        }
        Ok(Next::Send(planned))
    }

    fn shape_json(&self) -> String {
        serde_json::to_string(&self.shape).unwrap_or_else(|_| "[]".to_owned())
    }

    fn run_start(&self, now: DateTime<Utc>) -> RunStart<'_> {
        RunStart {
            run_key: &self.key,
            action: self.action,
            build: &self.engine.runs.build,
            mode: self.mode,
            now,
            lease_until: self.lease_until(now),
        }
    }

    /// The step's "sent" row, under the generation this runner holds (a new record's is 1).
    fn sent<'s>(
        &'s self,
        planned: &'s Planned,
        shape: &'s str,
        now: DateTime<Utc>,
    ) -> StepSent<'s> {
        StepSent {
            run_key: &self.key,
            generation: self.generation().max(1),
            step_no: planned.step_no,
            operation: &planned.operation,
            fingerprint: planned.fingerprint.as_deref(),
            idempotency_key: &planned.key,
            shape,
            now,
            lease_until: self.lease_until(now),
        }
    }

    /// Records the step sent in one synced write: with the run's taking (its first step), or
    /// with the previous step's held answer; `false` if the runner lost the run.
    async fn record_sent(
        &self,
        acquired: Option<Box<dyn Transaction>>,
        held: Option<HeldAnswer>,
        sent: &StepSent<'_>,
    ) -> Result<bool, HandlerError> {
        let (mut tx, fresh) = match acquired {
            Some(tx) => (tx, true),
            None if held.is_none() => return Ok(self.store.step_sent(sent).await?),
            None => (self.store.begin().await?, false),
        };
        let result: Result<bool, StoreError> = async {
            // The sent row's fence locks the run first, so the answer needs none of its own.
            if !self.store.step_sent_in(tx.as_mut(), sent).await? {
                return Ok(false);
            }
            if let Some(held) = &held {
                self.store.step_answer_in(tx.as_mut(), &self.answered(held)).await?;
            }
            Ok(true)
        }
        .await;
        let kept = commit_or_rollback(tx, result).await?;
        if kept && !fresh {
            crate::fault!("steps.after_answer");
        }
        Ok(kept)
    }

    /// The step's answer sealed (in recorded mode), to be written with the run's next write.
    fn hold_answer(
        &self,
        step_no: u32,
        fingerprint: Option<&str>,
        answer: &Value,
    ) -> Result<HeldAnswer, HandlerError> {
        let sealed = match fingerprint {
            Some(f) => {
                let plain = serde_json::to_vec(answer)
                    .map_err(|e| HandlerError::Failed(format!("an answer to seal: {e}")))?;
                let context = seal_context(&self.key, step_no, f);
                Some(
                    self.sealing()?
                        .seal(&plain, context.as_bytes())
                        .map_err(|e| HandlerError::Failed(e.to_string()))?,
                )
            }
            None => None,
        };
        Ok(HeldAnswer { step_no, sealed, at: self.engine.clock.now() })
    }

    /// A held answer as the store writes it.
    fn answered<'h>(&'h self, held: &'h HeldAnswer) -> StepAnswered<'h> {
        StepAnswered {
            run_key: &self.key,
            generation: self.generation(),
            step_no: held.step_no,
            sealed: held.sealed.as_ref().map(|(bytes, id)| (bytes.as_slice(), id.as_str())),
            now: held.at,
        }
    }
}

/// Commits the run's taking where it waited for the step it would have recorded with it.
async fn commit_acquired(acquired: Option<Box<dyn Transaction>>) -> Result<(), HandlerError> {
    if let Some(tx) = acquired {
        tx.commit().await?;
    }
    Ok(())
}

fn seal_context(run_key: &str, step_no: u32, fingerprint: &str) -> String {
    format!("{run_key}\n{step_no}\n{fingerprint}")
}

fn lost(run_key: &str) -> HandlerError {
    HandlerError::Failed(format!(
        "another runner took run {run_key:?} over: this attempt records and commits nothing"
    ))
}

#[async_trait]
impl RunServices for Run<'_> {
    async fn begin_writes(&mut self) -> Result<Box<dyn Transaction>, HandlerError> {
        // A held answer is recorded with the run's finish, in this transaction.
        match self.opener.open().await {
            Ok(tx) => Ok(tx),
            Err(OpenError::Handler(e)) => Err(self.runtime_failure(e)),
            Err(OpenError::Interrupt(i)) => {
                self.interrupt = Some(i);
                Err(HandlerError::Failed("the run has been done already".to_owned()))
            }
        }
    }

    async fn call(&mut self, call: Call) -> Result<Value, HandlerError> {
        // Its store keeps step records only if it is declared to call (placement).
        if !self.engine.app.declares_calls(self.action) {
            return Err(HandlerError::Failed(format!(
                "{} calls connection {:?} but is declared to make no calls: declare it with \
                 `.calls({:?}, &[{:?}])` (or `subscriber_via` for a subscriber), so that its \
                 store keeps the records its calls need",
                self.action, call.connection, self.action, call.connection
            )));
        }
        let answer = match call.kind {
            CallKind::Changing => self.step(call).await,
            CallKind::ReadOnly => {
                self.check_deadline(&call, self.engine.clock.now())?;
                self.send(call, None).await
            }
            CallKind::EachAttempt => {
                self.check_deadline(&call, self.engine.clock.now())?;
                let key = format!("{}.a{}", self.key, self.attempt);
                self.send(call, Some(key)).await
            }
        };
        answer.map_err(|e| self.runtime_failure(e))
    }

    fn next_call_key(&self) -> Option<String> {
        Some(step_key(&self.key, self.next_step))
    }
}
