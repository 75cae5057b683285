//! Planning a step against the run's record, and what a step that sends nothing answers: a
//! replay of its sealed answer, a refusal (the key window passed, the deadline too near, a second
//! call of a single-call handler), or the run's divergence from its record.
//!
//! Why apart from the rest of `steps`: this is the part that decides, from what was recorded,
//! whether a call may go out at all; the parent holds the lease, sends and records.

use chrono::{DateTime, Utc};
use serde_json::Value;

use jadpo_application::{Call, HandlerError};
use jadpo_core::model::encoding::Kept;
use jadpo_core::model::step::{StepMode, StepPlan, StoredStep, plan_step, step_key};

use super::{Run, lost, seal_context};
use crate::digest::request_digest;

impl Run<'_> {
    /// Plans the next step against the run's record: the call to send (its number, operation,
    /// fingerprint and key), or why nothing is sent.
    pub(super) fn plan(&mut self, call: &Call, now: DateTime<Utc>) -> Result<Planned, Early> {
        let step_no = self.next_step;
        if self.mode == StepMode::Dispatch && step_no > 0 {
            return Err(Early::Failed(HandlerError::Failed(format!(
                "{:?} is declared to make a single keyed call and made a second",
                self.action
            ))));
        }
        let operation = format!("{}:{}", call.connection, call.path);
        let fingerprint = match self.mode {
            StepMode::Recorded => Some(request_digest("POST", &operation, &call.body)),
            StepMode::Dispatch => None,
        };
        let recorded = self.holding.as_ref().and_then(|h| h.steps.get(step_no as usize)).cloned();
        let mut plan = plan_step(recorded.as_ref(), &operation, fingerprint.as_deref());
        if self.mode == StepMode::Dispatch && plan == StepPlan::Replay {
            // No answer is kept: the provider answers the same key again.
            plan = StepPlan::Resend;
        }
        self.next_step += 1;
        self.shape.push(operation.clone());
        match plan {
            StepPlan::Diverged(reason) => return Err(Early::Diverged(reason)),
            StepPlan::Replay => return Err(Early::Replay(Box::new((recorded, fingerprint)))),
            StepPlan::Resend => {
                self.check_key_window(call, recorded.as_ref(), now).map_err(Early::Failed)?;
            }
            StepPlan::Send => {}
        }
        self.check_deadline(call, now).map_err(Early::Failed)?;
        let key = step_key(&self.key, step_no);
        Ok(Planned { step_no, operation, fingerprint, key })
    }

    /// What a step that sends nothing answers.
    pub(super) async fn answer_early(&mut self, early: Early) -> Result<Value, HandlerError> {
        match early {
            Early::Failed(e) => Err(e),
            Early::Diverged(reason) => Err(self.diverge(&reason).await),
            Early::Replay(replayed) => {
                let (recorded, fingerprint) = *replayed;
                self.replay(recorded.as_ref(), fingerprint.as_deref())
            }
        }
    }

    pub(super) fn replay(
        &self,
        recorded: Option<&StoredStep>,
        fingerprint: Option<&str>,
    ) -> Result<Value, HandlerError> {
        let (Some(step), Some(fingerprint)) = (recorded, fingerprint) else {
            return Err(HandlerError::Failed("a replayed step has no record".to_owned()));
        };
        let Some((sealed, key_id)) = &step.sealed_answer else {
            return Err(HandlerError::Failed(format!(
                "step {} is answered but its sealed answer is missing",
                step.step_no
            )));
        };
        Kept::StepAnswer.read(step.encoding).map_err(|e| {
            HandlerError::Failed(format!("step {} cannot be replayed: {e}", step.step_no))
        })?;
        let context = seal_context(&self.key, step.step_no, fingerprint);
        let plain = self
            .sealing()?
            .open(key_id, sealed, context.as_bytes())
            .map_err(|e| HandlerError::Failed(e.to_string()))?;
        serde_json::from_slice(&plain)
            .map_err(|e| HandlerError::Failed(format!("a sealed answer is not JSON: {e}")))
    }

    /// A step sent earlier and never answered is not re-sent once its first send is older than
    /// the provider's key window: the provider may have forgotten the key, and would act twice.
    pub(super) fn check_key_window(
        &self,
        call: &Call,
        recorded: Option<&StoredStep>,
        now: DateTime<Utc>,
    ) -> Result<(), HandlerError> {
        let (Some(window), Some(step)) = (self.engine.app.key_window(&call.connection), recorded)
        else {
            return Ok(());
        };
        if jadpo_core::clock::after(step.first_sent_at, window) >= now {
            return Ok(());
        }
        Err(HandlerError::rejected(
            409,
            "Key window passed",
            format!(
                "step {} ({}) was first sent at {} under key {:?}, longer ago than connection \
                 {:?}'s key window of {}s: re-sending could repeat it at the provider; an \
                 operator must check with the provider",
                step.step_no,
                step.operation,
                step.first_sent_at,
                step.idempotency_key,
                call.connection,
                window.as_secs()
            ),
        ))
    }

    pub(super) async fn diverge(&mut self, reason: &str) -> HandlerError {
        let generation = self.generation();
        self.diverged = true;
        match self.store.step_run_diverge(&self.key, generation, reason).await {
            Ok(true) => {
                tracing::error!(alert = "steps.diverged", store = self.store.name(), item = %self.key, action = self.action, detail = %reason, "alert raised");
                diverged(reason)
            }
            Ok(false) => lost(&self.key),
            Err(e) => HandlerError::Store(e),
        }
    }
}

/// A step to send.
pub(super) struct Planned {
    pub(super) step_no: u32,
    pub(super) operation: String,
    pub(super) fingerprint: Option<String>,
    pub(super) key: String,
}

/// What planning a step came to: a step to send, or its answer without sending (a replay, a
/// refusal or a divergence).
pub(super) enum Next {
    Send(Planned),
    Answered(Result<Value, HandlerError>),
}

/// Why a step sends nothing.
pub(super) enum Early {
    Failed(HandlerError),
    Diverged(String),
    /// Answered before: its record and the request's fingerprint.
    Replay(Box<(Option<StoredStep>, Option<String>)>),
}

pub(super) fn diverged(reason: &str) -> HandlerError {
    HandlerError::rejected(
        409,
        "Run diverged",
        format!(
            "a retry asked a recorded step for a different request ({reason}); the run is \
             stopped and nothing was sent under the old key"
        ),
    )
}
