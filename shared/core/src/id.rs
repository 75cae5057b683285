//! Identifiers: UUIDv7, time-ordered so that rows inserted together sit together in indexes.
//!
//! The timestamp part comes from the injected [`Clock`], so ids made under a test clock sort the
//! way the test's time moves.

use uuid::{Timestamp, Uuid};

use crate::clock::Clock;

/// A new time-ordered id (UUIDv7) whose time part is the clock's now.
pub fn new_id(clock: &dyn Clock) -> Uuid {
    let now = clock.now();
    let seconds = u64::try_from(now.timestamp()).unwrap_or(0);
    let ts = Timestamp::from_unix(uuid::NoContext, seconds, now.timestamp_subsec_nanos());
    Uuid::new_v7(ts)
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Duration};

    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn ids_follow_the_injected_clock() {
        let clock =
            ManualClock::new(DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default());
        let first = new_id(&clock);
        clock.advance(Duration::milliseconds(5));
        let second = new_id(&clock);
        assert_eq!(first.get_version_num(), 7);
        assert!(first < second, "{first} should sort before {second}");
        let (secs, _) = first.get_timestamp().map(|t| t.to_unix()).unwrap_or_default();
        assert_eq!(secs, 1_700_000_000);
    }
}
