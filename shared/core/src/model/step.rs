//! Step records: what a run of an action or subscriber that makes changing calls keeps, so that a
//! retried run replays its answered calls, re-sends an unanswered one under the same key, and
//! stops when it would send a different request under a recorded key.
//!
//! A *run* is one handler's work for one delivery or one keyed request, across all its
//! attempts; its *key* is stable across them. Each changing call is a *step*, numbered in the
//! order the run makes it. The rules that decide what a step does on a retry are here, pure, so
//! they are tested without a database; the records are kept by the step store port.

use chrono::{DateTime, Utc};

/// How a run keeps its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepMode {
    /// Each step's request fingerprint and sealed answer are kept: a retry replays answers and
    /// detects a changed request.
    Recorded,
    /// A single keyed call: only its dispatch (key, when sent) is kept, with no fingerprint and
    /// no answer; the provider's key window bounds its retries.
    Dispatch,
}

impl StepMode {
    /// The name stored in `jadpo_step_records.mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recorded => "recorded",
            Self::Dispatch => "dispatch",
        }
    }

    /// The mode named `s`, as stored.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "recorded" => Some(Self::Recorded),
            "dispatch" => Some(Self::Dispatch),
            _ => None,
        }
    }
}

/// A run asking for its record: created on its first changing call, taken over by a later
/// attempt once the previous runner's lease has expired.
#[derive(Debug, Clone, Copy)]
pub struct RunStart<'a> {
    /// The run's key.
    pub run_key: &'a str,
    /// The action's or subscriber's name.
    pub action: &'a str,
    /// The build running it (kept from the first start).
    pub build: &'a str,
    pub mode: StepMode,
    pub now: DateTime<Utc>,
    /// Until when this runner holds the run (its deadline, or a default lease).
    pub lease_until: DateTime<Utc>,
}

/// One recorded step, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredStep {
    /// Its place in the run, from 0.
    pub step_no: u32,
    /// The connection and path it called (`payments /charges`).
    pub operation: String,
    /// SHA-256 of its canonical request (none in dispatch mode).
    pub fingerprint: Option<String>,
    /// The key it was sent with.
    pub idempotency_key: String,
    pub first_sent_at: DateTime<Utc>,
    pub sent_at: DateTime<Utc>,
    pub answered_at: Option<DateTime<Utc>>,
    /// The answer, sealed (nonce first), and the id of the key that sealed it.
    pub sealed_answer: Option<(Vec<u8>, String)>,
    /// The form of the sealed answer (`None`: written before encodings were recorded).
    pub encoding: Option<i64>,
}

/// What a run is granted when it asks for its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunGrant {
    /// The run is this runner's, under `generation`, with the steps recorded so far.
    Acquired { generation: i64, first_started_at: DateTime<Utc>, steps: Vec<StoredStep> },
    /// Another runner holds it until `until`.
    Held { until: DateTime<Utc> },
    /// It finished (its writes committed): nothing more may be sent for it.
    Finished,
    /// It diverged earlier; an operator must look at it.
    Diverged { reason: String },
}

/// A step about to be sent, recorded first (fenced by the runner's generation).
#[derive(Debug, Clone, Copy)]
pub struct StepSent<'a> {
    pub run_key: &'a str,
    pub generation: i64,
    pub step_no: u32,
    pub operation: &'a str,
    pub fingerprint: Option<&'a str>,
    pub idempotency_key: &'a str,
    /// The run's step shape so far, this step included (a JSON list of operations).
    pub shape: &'a str,
    pub now: DateTime<Utc>,
    /// The runner's lease, renewed with each step.
    pub lease_until: DateTime<Utc>,
}

/// A step's answer, recorded (fenced by the runner's generation).
#[derive(Debug, Clone, Copy)]
pub struct StepAnswered<'a> {
    pub run_key: &'a str,
    pub generation: i64,
    pub step_no: u32,
    /// The sealed answer and its key id; `None` in dispatch mode.
    pub sealed: Option<(&'a [u8], &'a str)>,
    pub now: DateTime<Utc>,
}

/// A step record as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecordView {
    pub run_key: String,
    pub action: String,
    pub build: String,
    /// The JSON list of operations.
    pub step_shape: String,
    pub mode: StepMode,
    pub first_started_at: DateTime<Utc>,
    pub runner_generation: i64,
    pub lease_expires_at: DateTime<Utc>,
    pub diverged: bool,
    pub divergence: Option<String>,
    pub finished_at: Option<DateTime<Utc>>,
    pub alerted_at: Option<DateTime<Utc>>,
    pub steps: Vec<StoredStep>,
}

/// What a step does, given what is recorded at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepPlan {
    /// Nothing recorded: record it as sent, then send it.
    Send,
    /// Sent before with the same request and never answered: send again with the same key.
    Resend,
    /// Answered before: return the recorded answer without calling.
    Replay,
    /// The recorded request differs: stop the run.
    Diverged(String),
}

/// Decides a step from what is recorded at its place (`recorded`), the operation and request
/// fingerprint of this attempt.
pub fn plan_step(
    recorded: Option<&StoredStep>,
    operation: &str,
    fingerprint: Option<&str>,
) -> StepPlan {
    let Some(step) = recorded else {
        return StepPlan::Send;
    };
    if step.operation != operation {
        return StepPlan::Diverged(format!(
            "step {} was {:?} and is now {operation:?}",
            step.step_no, step.operation
        ));
    }
    if step.fingerprint.as_deref() != fingerprint {
        return StepPlan::Diverged(format!(
            "step {} ({operation}) was sent with another request under key {:?}",
            step.step_no, step.idempotency_key
        ));
    }
    if step.answered_at.is_some() { StepPlan::Replay } else { StepPlan::Resend }
}

/// The idempotency key of step `step_no` of run `run_key`: the same on every retry of the run,
/// different for each step.
pub fn step_key(run_key: &str, step_no: u32) -> String {
    format!("{run_key}.{step_no}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(fingerprint: &str, answered: bool) -> StoredStep {
        let t = DateTime::<Utc>::UNIX_EPOCH;
        StoredStep {
            step_no: 1,
            operation: "payments /charges".into(),
            fingerprint: Some(fingerprint.into()),
            idempotency_key: step_key("run", 1),
            first_sent_at: t,
            sent_at: t,
            answered_at: answered.then_some(t),
            sealed_answer: None,
            encoding: None,
        }
    }

    #[test]
    fn a_step_is_sent_resent_replayed_or_diverged() {
        let op = "payments /charges";
        assert_eq!(plan_step(None, op, Some("f")), StepPlan::Send);
        assert_eq!(plan_step(Some(&step("f", false)), op, Some("f")), StepPlan::Resend);
        assert_eq!(plan_step(Some(&step("f", true)), op, Some("f")), StepPlan::Replay);
        let changed = plan_step(Some(&step("f", true)), op, Some("g"));
        assert!(matches!(changed, StepPlan::Diverged(why) if why.contains("another request")));
        let elsewhere = plan_step(Some(&step("f", false)), "mailer ", Some("f"));
        assert!(matches!(elsewhere, StepPlan::Diverged(why) if why.contains("mailer")));
    }

    #[test]
    fn each_step_has_its_own_stable_key() {
        assert_eq!(step_key("d1", 0), step_key("d1", 0));
        assert_ne!(step_key("d1", 0), step_key("d1", 1));
        assert_ne!(step_key("d1", 0), step_key("d2", 0));
        assert_eq!(StepMode::parse(StepMode::Dispatch.as_str()), Some(StepMode::Dispatch));
        assert_eq!(StepMode::parse("other"), None);
    }
}
