//! Circuit breakers: one per connection and store, over the deliveries beside it
//! (`jadpo_circuit_breakers`), shared by every concurrent delivery function through the
//! database.
//!
//! A run of connection failures opens the breaker. While it is open, deliveries of subscribers
//! that call the connection are *held* (the delivery records the connection and when it was held,
//! and waits until the breaker's pause ends) instead of attempted. When the pause ends, exactly one
//! delivery is let through as the probe: the row is updated under a lock in the same transaction
//! that read it, so two delivery functions cannot both take the probe. The probe's success closes
//! the breaker and releases the held deliveries (one `UPDATE`, so each is released once); its
//! failure reopens the breaker with a longer pause (doubling, up to a maximum). Housekeeping
//! raises the `breaker.open` alert once when a breaker stays open past its threshold.
//!
//! The state machine is pure ([`Breaker::gate`], [`Breaker::record`]); `jadpo-engine` runs it
//! inside short transactions on the delivery's store.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// A connection's breaker thresholds, declared with the connection
/// (`ApplicationBuilder::connection_with_breaker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Consecutive connection failures that open the breaker.
    pub failures_to_open: u32,
    /// The first pause before a probe.
    pub first_pause: Duration,
    /// The longest pause (it doubles after each failed probe up to this).
    pub max_pause: Duration,
    /// A probe that has not reported after this long is presumed lost; another may go.
    pub probe_timeout: Duration,
    /// An open breaker raises the `breaker.open` alert after this long.
    pub alert_after: Duration,
}

impl Default for BreakerPolicy {
    /// 5 failures; 30 s doubling to 15 min; probes presumed lost after 2 min; alert after 10 min.
    fn default() -> Self {
        Self {
            failures_to_open: 5,
            first_pause: Duration::from_secs(30),
            max_pause: Duration::from_secs(900),
            probe_timeout: Duration::from_secs(120),
            alert_after: Duration::from_secs(600),
        }
    }
}

/// A breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Deliveries are attempted.
    Closed,
    /// Deliveries are held until the pause ends.
    Open,
    /// One probe is in flight; the others are held.
    HalfOpen,
}

impl State {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }

    /// Parses the stored form.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "closed" => Some(Self::Closed),
            "open" => Some(Self::Open),
            "half_open" => Some(Self::HalfOpen),
            _ => None,
        }
    }
}

/// One breaker row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breaker {
    pub connection: String,
    pub state: State,
    /// The current run of connection failures.
    pub failures: u32,
    /// When it opened (the start of the current open episode).
    pub opened_at: Option<DateTime<Utc>>,
    /// The current pause, in milliseconds.
    pub pause_ms: i64,
    /// When the next probe may go.
    pub reopen_at: Option<DateTime<Utc>>,
    /// The delivery let through as the probe.
    pub probe_delivery: Option<String>,
    /// When the probe went.
    pub probe_started_at: Option<DateTime<Utc>>,
    /// When the open breaker's alert is due.
    pub alert_at: Option<DateTime<Utc>>,
    /// When that alert was raised.
    pub alert_raised_at: Option<DateTime<Utc>>,
}

/// What a delivery may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Attempt it (closed breaker).
    Pass,
    /// Attempt it as the one probe.
    Probe,
    /// Hold it until then.
    Hold {
        /// When it may come back.
        until: DateTime<Utc>,
    },
}

/// How an attempt went, as far as the connection is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// The subscriber succeeded.
    Success,
    /// A call to the connection failed (unreachable, timeout, 5xx or 429).
    ConnectionFailed,
    /// The attempt failed for another reason (says nothing about the connection).
    Other,
}

/// What [`Breaker::record`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Nothing worth telling.
    None,
    /// The run of failures opened it.
    Opened,
    /// The probe failed; paused again, longer.
    Reopened,
    /// The probe succeeded: closed, held deliveries to release.
    Closed,
}

/// `d` in whole milliseconds, saturating.
pub fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `t` plus `millis` milliseconds, saturating.
pub fn plus(t: DateTime<Utc>, millis: i64) -> DateTime<Utc> {
    t + chrono::Duration::milliseconds(millis)
}

impl Breaker {
    /// A closed breaker.
    pub fn closed(connection: &str) -> Self {
        Self {
            connection: connection.to_owned(),
            state: State::Closed,
            failures: 0,
            opened_at: None,
            pause_ms: 0,
            reopen_at: None,
            probe_delivery: None,
            probe_started_at: None,
            alert_at: None,
            alert_raised_at: None,
        }
    }

    /// Decides what `delivery` may do at `now`, taking the probe when it is free.
    pub fn gate(&mut self, delivery: &str, now: DateTime<Utc>, policy: &BreakerPolicy) -> Gate {
        match self.state {
            State::Closed => Gate::Pass,
            State::Open => match self.reopen_at {
                Some(at) if now < at => Gate::Hold { until: at },
                _ => self.take_probe(delivery, now),
            },
            State::HalfOpen => {
                if self.probe_delivery.as_deref() == Some(delivery) {
                    return Gate::Probe;
                }
                let lost_at = self.probe_started_at.map(|t| plus(t, ms(policy.probe_timeout)));
                match lost_at {
                    Some(at) if now < at => Gate::Hold { until: at },
                    _ => self.take_probe(delivery, now),
                }
            }
        }
    }

    fn take_probe(&mut self, delivery: &str, now: DateTime<Utc>) -> Gate {
        self.state = State::HalfOpen;
        self.probe_delivery = Some(delivery.to_owned());
        self.probe_started_at = Some(now);
        Gate::Probe
    }

    /// Records how `delivery`'s attempt went.
    pub fn record(
        &mut self,
        delivery: &str,
        result: AttemptResult,
        now: DateTime<Utc>,
        policy: &BreakerPolicy,
    ) -> Transition {
        let probing =
            self.state == State::HalfOpen && self.probe_delivery.as_deref() == Some(delivery);
        match (result, self.state) {
            (AttemptResult::Success, _) if probing => {
                *self = Self::closed(&self.connection);
                Transition::Closed
            }
            (AttemptResult::Success, State::Closed) => {
                self.failures = 0;
                Transition::None
            }
            (AttemptResult::ConnectionFailed, State::Closed) => {
                self.failures = self.failures.saturating_add(1);
                if self.failures < policy.failures_to_open.max(1) {
                    return Transition::None;
                }
                self.state = State::Open;
                self.opened_at = Some(now);
                self.pause_ms = ms(policy.first_pause);
                self.reopen_at = Some(plus(now, self.pause_ms));
                self.alert_at = Some(plus(now, ms(policy.alert_after)));
                Transition::Opened
            }
            (AttemptResult::ConnectionFailed, _) if probing => {
                self.failures = self.failures.saturating_add(1);
                self.state = State::Open;
                self.pause_ms = self.pause_ms.saturating_mul(2).clamp(1, ms(policy.max_pause));
                self.reopen_at = Some(plus(now, self.pause_ms));
                self.probe_delivery = None;
                self.probe_started_at = None;
                Transition::Reopened
            }
            (AttemptResult::Other, _) if probing => {
                // Inconclusive: free the probe at once for another delivery.
                self.state = State::Open;
                self.reopen_at = Some(now);
                self.probe_delivery = None;
                self.probe_started_at = None;
                Transition::None
            }
            _ => Transition::None,
        }
    }
}

#[cfg(test)]
mod tests;
