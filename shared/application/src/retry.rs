//! How a failed delivery is retried: exponential backoff with jitter, then dead.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// A subscriber's retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; after the last failure the delivery is dead.
    pub max_attempts: u32,
    /// Delay before the second attempt (doubling after each failure, plus jitter).
    pub min_delay: Duration,
    /// Longest delay between attempts, jitter included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 8 attempts, 1 s doubling to at most 15 min (about 2 minutes of retries before the last).
    fn default() -> Self {
        Self {
            max_attempts: 8,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(900),
        }
    }
}

impl RetryPolicy {
    /// The delay after the `failed`-th failed attempt, or `None` when no attempt is left. The
    /// jitter adds up to the delay itself, and the sum never passes `max_delay`.
    pub fn delay_after(&self, failed: u32) -> Option<Duration> {
        if failed >= self.max_attempts || failed == 0 {
            return None;
        }
        ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_jitter()
            .with_max_times(failed as usize)
            .build()
            .nth(failed as usize - 1)
            .map(|delay| delay.min(self.max_delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_with_jitter_and_stop_at_the_last_attempt() {
        let policy = RetryPolicy {
            max_attempts: 4,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        };
        for _ in 0..50 {
            let first = policy.delay_after(1).unwrap_or_default();
            let third = policy.delay_after(3).unwrap_or_default();
            assert!(first >= Duration::from_secs(1) && first < Duration::from_secs(2), "{first:?}");
            assert!(third >= Duration::from_secs(4) && third < Duration::from_secs(8), "{third:?}");
        }
        assert_eq!(policy.delay_after(4), None);
        assert_eq!(policy.delay_after(0), None);
    }

    #[test]
    fn delays_are_capped() {
        let policy = RetryPolicy {
            max_attempts: 30,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
        };
        for _ in 0..50 {
            for failed in 1..30 {
                let delay = policy.delay_after(failed);
                let delay = delay.unwrap_or_else(|| panic!("attempt {failed} of 30 has a delay"));
                assert!(delay >= policy.min_delay, "after {failed}: {delay:?}");
                assert!(delay <= policy.max_delay, "after {failed}: {delay:?} past the cap");
            }
        }
        assert_eq!(policy.delay_after(20), Some(policy.max_delay), "the cap is reached");
    }
}
