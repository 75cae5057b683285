//! Schedules: cron expressions in a time zone, or fixed rates, that emit an event through the
//! outbox at each tick, so the scheduled work is delivered like any other event.
//!
//! The state lives in `jadpo_schedules` (next due time, lease, last tick) and
//! `jadpo_schedule_runs` (each run and each skipped tick, with its reason) in the application's
//! schedule store. A tick pass (`jadpo-engine`) takes each due schedule's lease and, in one transaction
//! fenced by the lease's generation, records the runs and skipped ticks, writes the runs' events
//! and advances the next due time. Every tick has an identity derived from the schedule and the
//! tick's time, so two passes recording the same tick collide on the primary key and one run is
//! recorded, even if the leases were somehow both believed held.
//!
//! The decisions (which ticks are due, which of them run, which are skipped and why) are pure
//! functions of the stored state and the injected time: [`due_ticks`] and [`decide`].
//!
//! It sits below `jadpo-core` and depends on no other part of Jadpo: core's schedule role speaks
//! its rows and the application API declares its [`Schedule`]s. The cron parser and the bundled
//! time-zone database are its dependencies, not core's.

mod timing;

pub use timing::{ScheduleError, When};

use chrono::{DateTime, Utc};
use serde_json::Value;

/// What to do with a tick while the previous run's deliveries are unfinished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    /// Skip the tick, recording why (the default).
    #[default]
    Skip,
    /// Run anyway.
    Allow,
}

/// A schedule as the application declares it (`ApplicationBuilder::schedule`).
#[derive(Debug, Clone)]
pub struct Schedule {
    name: String,
    timing: Timing,
    event: String,
    payload: Value,
    catch_up: u32,
    overlap: Overlap,
}

/// The timing as written, checked when the application is built.
#[derive(Debug, Clone)]
enum Timing {
    Cron { expression: String, zone: String },
    Every(std::time::Duration),
}

impl Schedule {
    /// A schedule emitting `event` at each time the cron `expression` (5 fields, or 6 with
    /// seconds first) matches in the IANA time `zone` (e.g. `"Europe/Paris"`, `"UTC"`).
    pub fn cron(name: &str, expression: &str, zone: &str, event: &str) -> Self {
        Self::new(
            name,
            Timing::Cron { expression: expression.to_owned(), zone: zone.to_owned() },
            event,
        )
    }

    /// A schedule emitting `event` every `period` (whole seconds, at least one), aligned to the
    /// Unix epoch so every process agrees on the ticks.
    pub fn every(name: &str, period: std::time::Duration, event: &str) -> Self {
        Self::new(name, Timing::Every(period), event)
    }

    fn new(name: &str, timing: Timing, event: &str) -> Self {
        Self {
            name: name.to_owned(),
            timing,
            event: event.to_owned(),
            payload: Value::Null,
            catch_up: 0,
            overlap: Overlap::Skip,
        }
    }

    /// Data passed in every run's event under `"data"`.
    #[must_use]
    pub fn payload(mut self, payload: Value) -> Self {
        self.payload = payload;
        self
    }

    /// After missed ticks, also run up to `n` of the most recent missed ones (default 0: run
    /// only the latest and record the others as skipped).
    #[must_use]
    pub fn catch_up(mut self, n: u32) -> Self {
        self.catch_up = n;
        self
    }

    /// What to do while the previous run's deliveries are unfinished.
    #[must_use]
    pub fn overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The event it emits.
    pub fn event(&self) -> &str {
        &self.event
    }

    /// Checks the timing: a bad cron expression, an unknown time zone or a rate under one
    /// second is an error naming the schedule.
    pub fn compile(self) -> Result<ScheduleSpec, ScheduleError> {
        let when = match &self.timing {
            Timing::Cron { expression, zone } => When::cron(expression, zone),
            Timing::Every(period) => When::every(*period),
        }
        .map_err(|e| e.for_schedule(&self.name))?;
        Ok(ScheduleSpec {
            name: self.name,
            when,
            event: self.event,
            payload: self.payload,
            catch_up: self.catch_up,
            overlap: self.overlap,
        })
    }
}

/// A checked schedule.
#[derive(Debug, Clone)]
pub struct ScheduleSpec {
    /// Its name, unique in the application.
    pub name: String,
    /// When it is due.
    pub when: When,
    /// The event each run emits.
    pub event: String,
    /// Data passed in each run's event.
    pub payload: Value,
    /// How many missed ticks besides the latest run after a gap.
    pub catch_up: u32,
    /// What to do while the previous run is unfinished.
    pub overlap: Overlap,
}

/// Why a run happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The schedule was due.
    Due,
    /// A missed tick run by the schedule's catch-up.
    CatchUp,
    /// An operator ran it (`jadpo schedules trigger`).
    Operator,
}

impl Trigger {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Due => "due",
            Self::CatchUp => "catch_up",
            Self::Operator => "operator",
        }
    }
}

/// The ticks due at a pass: at most `cap` of them listed, the most recent last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The listed ticks, ascending.
    pub ticks: Vec<DateTime<Utc>>,
    /// When more ticks were due than listed: the first of them (the stored next due time),
    /// standing for every unlisted one.
    pub unlisted_from: Option<DateTime<Utc>>,
    /// The next due time after this pass.
    pub next_due: DateTime<Utc>,
}

/// The ticks due at `now` for a schedule whose stored next due time is `next_due`: that tick
/// (computed by the expression in force when it was stored, so a changed expression takes effect
/// at the next due time) and every tick of `when` after it up to `now`. `None` when nothing is
/// due. At most `cap` ticks are listed; older ones are summarized by [`Due::unlisted_from`].
pub fn due_ticks(
    when: &When,
    next_due: DateTime<Utc>,
    now: DateTime<Utc>,
    cap: usize,
) -> Result<Option<Due>, ScheduleError> {
    if next_due > now {
        return Ok(None);
    }
    let cap = cap.max(1);
    let mut newest_first = Vec::new();
    let mut cursor = when.latest_at_or_before(now)?;
    while let Some(t) = cursor.filter(|t| *t > next_due) {
        if newest_first.len() + 1 >= cap {
            break;
        }
        newest_first.push(t);
        cursor = when.latest_before(t)?;
    }
    let complete = cursor.is_none_or(|t| t <= next_due);
    let unlisted_from = (!complete).then_some(next_due);
    if complete {
        newest_first.push(next_due);
    }
    newest_first.reverse();
    Ok(Some(Due { ticks: newest_first, unlisted_from, next_due: when.next_after(now)? }))
}

/// What a pass records for a schedule's due ticks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    /// Ticks to run, ascending.
    pub runs: Vec<(DateTime<Utc>, Trigger)>,
    /// Ticks to record as skipped, with the reason.
    pub skipped: Vec<(DateTime<Utc>, String)>,
}

/// Decides the runs and skipped ticks: paused → every tick skipped; otherwise the latest tick
/// runs with up to `catch_up` missed ones before it, the rest skipped as missed; and while
/// `unfinished` names an unfinished previous run (overlap policy `Skip`), the ticks that would
/// run are skipped with that reason.
pub fn decide(due: &Due, catch_up: u32, paused: bool, unfinished: Option<&str>) -> Decision {
    let mut decision = Decision::default();
    if let Some(first) = due.unlisted_from {
        let reason = if paused {
            "paused (and every earlier missed tick since this one)".to_owned()
        } else {
            format!(
                "missed: the tick function did not run; this and every tick until {} \
                 were skipped and are not recorded one by one",
                due.ticks.first().map_or_else(String::new, DateTime::to_rfc3339)
            )
        };
        decision.skipped.push((first, reason));
    }
    let last = due.ticks.len().saturating_sub(1);
    let run_from = last.saturating_sub(usize::try_from(catch_up).unwrap_or(usize::MAX));
    for (i, tick) in due.ticks.iter().enumerate() {
        let reason = if paused {
            Some("paused by an operator".to_owned())
        } else if i < run_from {
            Some(format!(
                "missed: the tick function did not run at this time (catch-up runs at most {catch_up} missed ticks)"
            ))
        } else {
            unfinished.map(|u| format!("overlap: {u}"))
        };
        match reason {
            Some(reason) => decision.skipped.push((*tick, reason)),
            None if i == last => decision.runs.push((*tick, Trigger::Due)),
            None => decision.runs.push((*tick, Trigger::CatchUp)),
        }
    }
    decision
}

/// A tick's identity: the schedule and the tick's time, so the same tick recorded twice
/// collides.
pub fn tick_id(schedule: &str, tick: DateTime<Utc>) -> String {
    format!("{schedule}@{}", tick.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// A schedule's stored state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRow {
    pub name: String,
    /// The expression in force ([`When::describe`]).
    pub expression: String,
    /// The event it emits.
    pub event_type: String,
    /// When it is next due.
    pub next_due_at: DateTime<Utc>,
    /// The last tick recorded (run or skipped).
    pub last_tick_at: Option<DateTime<Utc>>,
    pub last_run_id: Option<String>,
    /// When an operator paused it.
    pub paused_at: Option<DateTime<Utc>>,
    /// When it disappeared from the application's declaration.
    pub removed_at: Option<DateTime<Utc>>,
    /// The lease's holder, if any.
    pub lease_owner: Option<String>,
    /// When the lease expires.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

impl ScheduleRow {
    /// The state as operators see it.
    pub fn state(&self) -> &'static str {
        if self.removed_at.is_some() {
            "removed"
        } else if self.paused_at.is_some() {
            "paused"
        } else {
            "active"
        }
    }

    /// The row as JSON (the item's state recorded with an operator action, and `--json`).
    pub fn to_json(&self) -> Value {
        let t = |v: &Option<DateTime<Utc>>| v.map(|t| t.to_rfc3339());
        serde_json::json!({
            "name": self.name,
            "state": self.state(),
            "expression": self.expression,
            "event": self.event_type,
            "next_due_at": self.next_due_at.to_rfc3339(),
            "last_tick_at": t(&self.last_tick_at),
            "last_run_id": self.last_run_id,
            "paused_at": t(&self.paused_at),
            "removed_at": t(&self.removed_at),
            "lease_owner": self.lease_owner,
            "lease_expires_at": t(&self.lease_expires_at),
        })
    }
}

/// One recorded run or skipped tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRun {
    /// Its identity ([`tick_id`] for ticks).
    pub id: String,
    pub schedule: String,
    /// The tick's time (an operator's run: when it was asked for).
    pub tick_at: DateTime<Utc>,
    /// `run` or `skipped`.
    pub status: String,
    /// `due`, `catch_up` or `operator`.
    pub trigger: String,
    /// Why it was skipped.
    pub reason: Option<String>,
    /// The event a run emitted.
    pub outbox_id: Option<String>,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// A schedule to create.
#[derive(Debug, Clone)]
pub struct NewSchedule<'a> {
    pub name: &'a str,
    /// [`When::describe`].
    pub expression: &'a str,
    pub event_type: &'a str,
    /// Its first due time.
    pub next_due_at: DateTime<Utc>,
}

/// A run or skipped tick to record.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    /// Its identity.
    pub id: &'a str,
    pub schedule: &'a str,
    pub tick_at: DateTime<Utc>,
    /// Skipped with this reason, or run (`None`).
    pub skipped: Option<&'a str>,
    /// `due`, `catch_up` or `operator`.
    pub trigger: &'a str,
    /// The event a run emitted.
    pub outbox_id: Option<&'a str>,
}

#[cfg(test)]
mod tests;
