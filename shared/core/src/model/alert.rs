//! Alerts: what housekeeping raises for an operator (a dead delivery, an overdue schedule, a
//! breaker left open), recorded as raised in the same transaction so each is raised once, and
//! logged as a structured event.

/// An alert raised by a housekeeping pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// `delivery.dead`, `schedule.overdue` or `breaker.open`.
    pub kind: &'static str,
    /// The delivery's id or the schedule's name.
    pub item: String,
    /// What an operator needs to know.
    pub detail: String,
}
