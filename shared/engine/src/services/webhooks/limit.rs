//! Each source's rate, kept per process before any database work: a token bucket per source,
//! filled at the source's rate up to its burst, one token a request. Deployed, each function
//! instance keeps its own (the API's throttling bounds them together); time is the caller's.

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use jadpo_application::WebhookSource;

/// The buckets of every source.
#[derive(Debug, Default)]
pub struct Buckets {
    sources: Mutex<BTreeMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: DateTime<Utc>,
}

impl Buckets {
    /// Takes a token of `source`'s bucket at `now`: `Ok`, or `Err` with the seconds until one is
    /// there (the `Retry-After` to answer).
    pub fn admit(&self, source: &WebhookSource, now: DateTime<Utc>) -> Result<(), u64> {
        let rate = f64::from(source.rate_per_second.max(1));
        let burst = f64::from(source.burst.max(1));
        let mut sources = self.sources.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let bucket =
            sources.entry(source.name.clone()).or_insert(Bucket { tokens: burst, at: now });
        let elapsed = (now - bucket.at).num_milliseconds().max(0) as f64 / 1000.0;
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.at = now.max(bucket.at);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(((1.0 - bucket.tokens) / rate).ceil().max(1.0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jadpo_application::WebhookScheme;

    #[test]
    fn a_burst_is_taken_then_the_rate() {
        let source = WebhookSource::new("gh", WebhookScheme::GitHub, "a").rate(2, 3);
        let buckets = Buckets::default();
        let t0 = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let admitted = (0..5).filter(|_| buckets.admit(&source, t0).is_ok()).count();
        assert_eq!(admitted, 3, "the burst");
        assert_eq!(buckets.admit(&source, t0), Err(1), "the next token is half a second away");
        let later = t0 + chrono::Duration::milliseconds(500);
        assert_eq!(buckets.admit(&source, later), Ok(()), "refilled at the rate");
        assert!(buckets.admit(&source, later).is_err());
        let other = WebhookSource::new("sw", WebhookScheme::Svix, "a").rate(1, 1);
        assert!(buckets.admit(&other, t0).is_ok(), "each source has its own bucket");
        let much_later = t0 + chrono::Duration::hours(1);
        let refilled = (0..5).filter(|_| buckets.admit(&source, much_later).is_ok()).count();
        assert_eq!(refilled, 3, "never more than the burst");
    }
}
