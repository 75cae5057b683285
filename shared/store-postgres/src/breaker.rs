//! Circuit-breaker statements (PostgreSQL): `jadpo_circuit_breakers` and the deliveries it holds.

use jadpo_store_sql::{BreakerSql, Statement};

const BREAKER: &str = "SELECT connection, state, failures, opened_at, pause_ms, reopen_at, \
    probe_delivery, probe_started_at, alert_at, alert_raised_at FROM jadpo_circuit_breakers";

/// The circuit-breaker statements. The row is locked for the transaction that decides, so two
/// delivery functions cannot both take the probe.
pub(crate) static BREAKERS: BreakerSql = BreakerSql {
    ensure: Statement::new(
        "INSERT INTO jadpo_circuit_breakers (connection, updated_at) VALUES ($1, $2) \
        ON CONFLICT (connection) DO NOTHING",
    ),
    lock: Statement::new(const_format::concatcp!(BREAKER, " WHERE connection = $1 FOR UPDATE")),
    get: Statement::new(const_format::concatcp!(BREAKER, " WHERE connection = $1")),
    write: Statement::new(
        "UPDATE jadpo_circuit_breakers SET state = $2, failures = $3, opened_at = $4, \
        pause_ms = $5, reopen_at = $6, probe_delivery = $7, probe_started_at = $8, alert_at = $9, \
        alert_raised_at = $10, updated_at = $11 WHERE connection = $1",
    ),
    hold: Statement::new(
        "UPDATE jadpo_deliveries SET held_connection = $2, held_at = $3, next_attempt_at = $4, \
        enqueued_at = NULL WHERE id = $1 AND status = 'pending'",
    ),
    unhold: Statement::new(
        "UPDATE jadpo_deliveries SET held_connection = NULL, held_at = NULL WHERE id = $1",
    ),
    release: Statement::new(
        "UPDATE jadpo_deliveries SET held_connection = NULL, held_at = NULL, \
        next_attempt_at = $2, enqueued_at = NULL WHERE held_connection = $1 AND status = 'pending' \
        RETURNING id",
    ),
    list: Statement::new(const_format::concatcp!(BREAKER, " ORDER BY connection")),
    alerts: Statement::new(
        "UPDATE jadpo_circuit_breakers SET alert_raised_at = $1 WHERE connection IN ( \
        SELECT connection FROM jadpo_circuit_breakers WHERE state <> 'closed' \
        AND alert_raised_at IS NULL AND alert_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) \
        RETURNING connection, opened_at",
    ),
};
