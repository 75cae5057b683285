//! Time, injected.
//!
//! Nothing in Jadpo reads the system clock ad hoc: schedules, retention and lease expiry all ask a
//! [`Clock`], so tests move time with a [`ManualClock`] instead of sleeping.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current instant, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self { now: Mutex::new(start) }
    }

    /// Moves the clock forward (or back, with a negative duration).
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The longest span a setting may give: 100 years. A retention, window or lease beyond it is
/// refused where it is configured; [`before`] and [`after`] keep spans declared in code (an
/// entity's audit retention, a connection's key window) from panicking the arithmetic.
pub const LONGEST_SETTING: std::time::Duration = std::time::Duration::from_secs(36_525 * 86_400);

/// `at` less `span`, never earlier than the Unix epoch (or `at`, if that is earlier still): a
/// retention longer than the calendar keeps everything rather than panicking, and the cutoff is
/// a time every store can hold.
pub fn before(at: DateTime<Utc>, span: std::time::Duration) -> DateTime<Utc> {
    let floor = DateTime::UNIX_EPOCH.min(at);
    let earlier = Duration::from_std(span).ok().and_then(|s| at.checked_sub_signed(s));
    earlier.map_or(floor, |t| t.max(floor))
}

/// `at` plus `span`, never later than the last second of year 9999 (or `at`, if that is later
/// still): an expiry or deadline past the calendar is "never", not a panic, and a time every
/// store can hold.
pub fn after(at: DateTime<Utc>, span: std::time::Duration) -> DateTime<Utc> {
    let ceiling = DateTime::from_timestamp(253_402_300_799, 0).unwrap_or(at).max(at);
    let later = Duration::from_std(span).ok().and_then(|s| at.checked_add_signed(s));
    later.map_or(ceiling, |t| t.min(ceiling))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_past_the_calendar_saturate_instead_of_panicking() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let day = std::time::Duration::from_secs(86_400);
        assert_eq!(before(now, day), now - Duration::days(1));
        assert_eq!(after(now, day), now + Duration::days(1));
        for huge in [std::time::Duration::MAX, std::time::Duration::from_secs(u64::MAX / 2)] {
            assert_eq!(before(now, huge), DateTime::UNIX_EPOCH);
            assert_eq!(after(now, huge).timestamp(), 253_402_300_799, "9999-12-31T23:59:59Z");
        }
        let ancient = DateTime::from_timestamp(-1_000_000, 0).unwrap_or_default();
        assert_eq!(before(ancient, day), ancient, "never later than the time it starts from");
        let century = LONGEST_SETTING;
        assert!(after(now, century) > now && before(now, century) >= DateTime::UNIX_EPOCH);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::seconds(90));
        assert_eq!(clock.now(), start + Duration::seconds(90));
        clock.set(start);
        assert_eq!(clock.now(), start);
    }
}
