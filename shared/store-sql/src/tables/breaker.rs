//! `BreakerSql`: the slots of the breaker role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_circuit_breakers` and held deliveries.
    pub struct BreakerSql {
        /// Create a closed breaker unless one exists.
        ensure(connection, now),
        /// Returns the row ([`Breaker`]'s columns), locked where the dialect can.
        lock(connection),
        /// Returns the row ([`Breaker`]'s columns) as it stands, unlocked.
        get(connection),
        /// The whole row.
        write(connection, state, failures, opened_at, pause_ms, reopen_at, probe_delivery, probe_started_at, alert_at, alert_raised_at, now),
        /// Hold a pending delivery until `until`.
        hold(id, connection, now, until),
        /// The delivery let through as the probe is no longer held.
        unhold(id),
        /// Release the held pending deliveries of `connection`, due now; returns their `id`s.
        release(connection, now),
        /// Returns every breaker, by connection.
        list(),
        /// Returns `connection, opened_at`: open breakers past their alert time whose alert is not
        /// raised, marking it raised.
        alerts(now, limit),
    }
}
