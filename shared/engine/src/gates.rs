//! The circuit breakers one delivery meets: each connection its subscriber calls is admitted by
//! that connection's own breaker when the first call to it is about to be sent, and each is
//! settled after the attempt with what that connection did. A subscriber declared with one
//! connection that also calls another is held by the other's open breaker, and the other's
//! failures are counted on the other's breaker, never on the declared one's.
//!
//! The declared connection is admitted before the subscriber runs, as before any call: an open
//! breaker then holds the delivery without running anything. A call replayed from the run's
//! record reaches no service and meets no breaker.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use jadpo_application::HandlerError;
use jadpo_core::model::breaker::{AttemptResult, Breaker, BreakerPolicy, Gate, Transition};
use jadpo_core::ports::ConnectionError;
use jadpo_core::{Store, StoreError};

use crate::breaker::{admit, settle};
use crate::context::Engine;

/// What one admitted connection did during the attempt.
struct Admitted {
    policy: BreakerPolicy,
    /// The row its pass was decided on without a lock, if it was.
    passed_on: Option<Breaker>,
    /// A call to it answered.
    answered: bool,
    /// A call to it failed on the service's side (unreachable, a 5xx or a 429).
    failed: bool,
}

/// The breakers of one delivery's attempt, in the store its row lives in.
pub(crate) struct CallGates {
    store: Arc<dyn Store>,
    delivery: String,
    admitted: BTreeMap<String, Admitted>,
    /// The connection whose breaker held the delivery, and until when.
    held: Option<(String, DateTime<Utc>)>,
}

/// What a call did, for its connection's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallSeen {
    /// The service answered (a 4xx other than 429 too: the request's fault, not the service's).
    Answered,
    /// Unreachable, a 5xx or a 429: counted as the service's failure.
    ServiceFailed,
    /// Never sent (an undeclared connection, a bad path).
    NotSent,
}

impl CallSeen {
    /// What `answered` tells the breaker: a 4xx other than 429 is the request's fault, not the
    /// service's.
    pub(crate) fn of<T>(answered: &Result<T, ConnectionError>) -> Self {
        match answered {
            Ok(_) => Self::Answered,
            Err(ConnectionError::Unreachable { .. }) => Self::ServiceFailed,
            Err(ConnectionError::Status { status, .. }) if *status >= 500 || *status == 429 => {
                Self::ServiceFailed
            }
            Err(ConnectionError::Status { .. }) => Self::Answered,
            Err(ConnectionError::Unknown(_) | ConnectionError::BadPath { .. }) => Self::NotSent,
        }
    }
}

/// How an attempt ended, for the breakers of connections it did not fail on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It committed (or had been handled already).
    Succeeded,
    /// It failed, was deferred or was held.
    NotSucceeded,
}

impl CallGates {
    pub(crate) fn new(store: &Arc<dyn Store>, delivery: &str) -> Self {
        let (store, delivery) = (Arc::clone(store), delivery.to_owned());
        Self { store, delivery, admitted: BTreeMap::new(), held: None }
    }

    /// Admits `connection` for this delivery unless it already was; `Some(until)` when its
    /// breaker holds the delivery (the hold is written with the gate's transaction).
    pub(crate) async fn admit(
        &mut self,
        engine: &Engine,
        connection: &str,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        if self.admitted.contains_key(connection)
            || !engine.app.connections().iter().any(|c| c == connection)
        {
            return Ok(None);
        }
        let policy = engine.app.breaker_policy(connection).unwrap_or_default();
        let at = (connection, self.delivery.as_str());
        let (gate, passed_on) = pass_or_admit(engine, self.store.as_ref(), at, &policy).await?;
        if let Gate::Hold { until } = gate {
            tracing::debug!(delivery = %self.delivery, %connection, %until, "held by the circuit breaker");
            self.held = Some((connection.to_owned(), until));
            return Ok(Some(until));
        }
        let admitted = Admitted { policy, passed_on, answered: false, failed: false };
        self.admitted.insert(connection.to_owned(), admitted);
        Ok(None)
    }

    /// Admits `connection` before a call is sent to it; a breaker that holds the delivery
    /// fails the call (the hold is recorded, [`CallGates::held`] says so).
    pub(crate) async fn before_call(
        &mut self,
        engine: &Engine,
        connection: &str,
    ) -> Result<(), HandlerError> {
        match self.admit(engine, connection).await? {
            None => Ok(()),
            Some(until) => Err(HandlerError::Failed(format!(
                "the circuit breaker of connection {connection:?} is open: held until {until}"
            ))),
        }
    }

    /// Notes what a call to `connection` did.
    pub(crate) fn note(&mut self, connection: &str, seen: CallSeen) {
        if let Some(admitted) = self.admitted.get_mut(connection) {
            admitted.answered |= seen == CallSeen::Answered;
            admitted.failed |= seen == CallSeen::ServiceFailed;
        }
    }

    /// The connection whose breaker held the delivery during its run, and until when.
    pub(crate) fn held(&self) -> Option<(&str, DateTime<Utc>)> {
        self.held.as_ref().map(|(c, until)| (c.as_str(), *until))
    }

    /// Records the attempt on every admitted connection's breaker: a failure where a call to it
    /// failed on the service's side; a success where the attempt succeeded or a call to it
    /// answered; neither otherwise. A breaker not reached costs its count, never the delivery.
    pub(crate) async fn settle_all(self, engine: &Engine, ended: Ended) {
        for (connection, admitted) in &self.admitted {
            let result = if admitted.failed {
                AttemptResult::ConnectionFailed
            } else if ended == Ended::Succeeded || admitted.answered {
                AttemptResult::Success
            } else {
                AttemptResult::Other
            };
            let at = (connection.as_str(), self.delivery.as_str());
            let passed_on = admitted.passed_on.as_ref();
            let settled =
                settle_noting(engine, self.store.as_ref(), at, result, passed_on, &admitted.policy);
            if let Err(e) = settled.await {
                // The attempt itself is recorded apart; a lost probe result frees the probe
                // after the policy's probe timeout.
                tracing::warn!(%connection, error = %e, "could not record the attempt on the circuit breaker");
            }
        }
    }
}

/// The breaker's gate for a delivery calling `at.0`: a pass on the row this process last saw
/// closed, while it is trusted (no read); else [`admit`], its row remembered when it passed.
async fn pass_or_admit(
    engine: &Engine,
    store: &dyn Store,
    at: (&str, &str),
    policy: &BreakerPolicy,
) -> Result<(Gate, Option<Breaker>), StoreError> {
    let (connection, delivery) = at;
    let now = engine.clock.now();
    let trusted_for = engine.settings.breaker_trusted_for;
    if let Some(mut seen) = engine.breakers_seen.closed(store.name(), connection, now, trusted_for)
    {
        let before = seen.clone();
        if seen.gate(delivery, now, policy) == Gate::Pass && seen == before {
            return Ok((Gate::Pass, Some(before)));
        }
    }
    let (gate, passed_on) = admit(store, connection, delivery, now, policy).await?;
    match &passed_on {
        Some(row) => engine.breakers_seen.note(store.name(), row, now),
        None => engine.breakers_seen.forget(store.name(), connection),
    }
    Ok((gate, passed_on))
}

/// [`settle`]s the attempt; anything but a success that changed nothing makes this process
/// forget the breaker it saw closed, so the next delivery reads the row.
async fn settle_noting(
    engine: &Engine,
    store: &dyn Store,
    at: (&str, &str),
    result: AttemptResult,
    passed_on: Option<&Breaker>,
    policy: &BreakerPolicy,
) -> Result<(Transition, u64), StoreError> {
    let settled = settle(store, at, result, passed_on, engine.clock.now(), policy).await;
    if result != AttemptResult::Success || !matches!(settled, Ok((Transition::None, _))) {
        engine.breakers_seen.forget(store.name(), at.0);
    }
    settled
}
