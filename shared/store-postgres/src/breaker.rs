//! Circuit-breaker statements (PostgreSQL): `jadpo_circuit_breakers` and the deliveries it holds.

use jadpo_store_sql::tables::breaker;
use jadpo_store_sql::{BreakerSql, sql};

const BREAKER: &str = "SELECT connection, state, failures, opened_at, pause_ms, reopen_at, \
    probe_delivery, probe_started_at, alert_at, alert_raised_at FROM jadpo_circuit_breakers";

/// The circuit-breaker statements. The row is locked for the transaction that decides, so two
/// delivery functions cannot both take the probe.
pub(crate) static BREAKERS: BreakerSql = BreakerSql {
    ensure: sql!(
        breaker::Ensure,
        "INSERT INTO jadpo_circuit_breakers (connection, updated_at) VALUES ($connection, $now) \
        ON CONFLICT (connection) DO NOTHING",
    ),
    lock: sql!(
        breaker::Lock,
        const_format::concatcp!(BREAKER, " WHERE connection = $connection FOR UPDATE")
    ),
    get: sql!(breaker::Get, const_format::concatcp!(BREAKER, " WHERE connection = $connection")),
    write: sql!(
        breaker::Write,
        "UPDATE jadpo_circuit_breakers SET state = $state, failures = $failures, opened_at = $opened_at, \
        pause_ms = $pause_ms, reopen_at = $reopen_at, probe_delivery = $probe_delivery, probe_started_at = $probe_started_at, alert_at = $alert_at, \
        alert_raised_at = $alert_raised_at, updated_at = $now WHERE connection = $connection",
    ),
    hold: sql!(
        breaker::Hold,
        "UPDATE jadpo_deliveries SET held_connection = $connection, held_at = $now, next_attempt_at = $until, \
        enqueued_at = NULL WHERE id = $id AND status = 'pending'",
    ),
    unhold: sql!(
        breaker::Unhold,
        "UPDATE jadpo_deliveries SET held_connection = NULL, held_at = NULL WHERE id = $id",
    ),
    release: sql!(
        breaker::Release,
        "UPDATE jadpo_deliveries SET held_connection = NULL, held_at = NULL, \
        next_attempt_at = $now, enqueued_at = NULL WHERE held_connection = $connection AND status = 'pending' \
        RETURNING id",
    ),
    list: sql!(breaker::List, const_format::concatcp!(BREAKER, " ORDER BY connection")),
    alerts: sql!(
        breaker::Alerts,
        "UPDATE jadpo_circuit_breakers SET alert_raised_at = $now WHERE connection IN ( \
        SELECT connection FROM jadpo_circuit_breakers WHERE state <> 'closed' \
        AND alert_raised_at IS NULL AND alert_at <= $now LIMIT $limit FOR UPDATE SKIP LOCKED) \
        RETURNING connection, opened_at",
    ),
};
