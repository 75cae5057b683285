//! `BreakerSql`: the slots of the breaker role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_circuit_breakers` and held deliveries.
    pub struct BreakerSql {
        /// Create a closed breaker unless one exists.
        ensure: Ensure(connection: String, now: DateTime<Utc>),
        /// Returns the row ([`Breaker`]'s columns), locked where the dialect can.
        lock: Lock(connection: String),
        /// Returns the row ([`Breaker`]'s columns) as it stands, unlocked.
        get: Get(connection: String),
        /// The whole row.
        write: Write(
            connection: String,
            state: String,
            failures: i64,
            opened_at: Option<DateTime<Utc>>,
            pause_ms: i64,
            reopen_at: Option<DateTime<Utc>>,
            probe_delivery: Option<String>,
            probe_started_at: Option<DateTime<Utc>>,
            alert_at: Option<DateTime<Utc>>,
            alert_raised_at: Option<DateTime<Utc>>,
            now: DateTime<Utc>,
        ),
        /// Hold a pending delivery until `until`.
        hold: Hold(id: String, connection: String, now: DateTime<Utc>, until: DateTime<Utc>),
        /// The delivery let through as the probe is no longer held.
        unhold: Unhold(id: String),
        /// Release the held pending deliveries of `connection`, due now; returns their `id`s.
        release: Release(connection: String, now: DateTime<Utc>),
        /// Returns every breaker, by connection.
        list: List(),
        /// Returns `connection, opened_at`: open breakers past their alert time whose alert is not
        /// raised, marking it raised.
        alerts: Alerts(now: DateTime<Utc>, limit: i64),
    }
}
