//! Statements behind operators' changes to deliveries (SQLite).

use crate::pipeline::DELIVERY_COLUMNS;
use jadpo_store_sql::{DeliveryAdminSql, Statement};

/// Operator changes to deliveries.
pub(crate) static ADMIN: DeliveryAdminSql = DeliveryAdminSql {
    get_locked: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = $1"
    )),
    retry: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2, \
        enqueued_at = NULL, finished_at = NULL, held_connection = NULL, held_at = NULL \
        WHERE id = $1 AND status IN ('pending', 'dead')",
    ),
    discard: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'discarded', finished_at = $2, last_failure = $3, \
        enqueued_at = NULL, held_connection = NULL, held_at = NULL \
        WHERE id = $1 AND status IN ('pending', 'dead')",
    ),
    page_all: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE ($1 IS NULL OR d.subscriber = $1) AND ($2 IS NULL OR o.event_type = $2) AND ($3 IS NULL OR d.held_connection = $3) AND d.created_at >= $4 AND (d.created_at, d.id) < ($5, $6) ORDER BY d.created_at DESC, d.id DESC LIMIT $7"
    )),
    page_status: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id \
        WHERE d.status = $1 AND ($2 IS NULL OR d.subscriber = $2) AND ($3 IS NULL OR o.event_type = $3) AND ($4 IS NULL OR d.held_connection = $4) AND d.created_at >= $5 AND (d.created_at, d.id) < ($6, $7) ORDER BY d.created_at DESC, d.id DESC LIMIT $8"
    )),
    count_status: Statement::new(
        "SELECT count(*) AS n FROM (SELECT 1 FROM jadpo_deliveries WHERE status = $1 \
        ORDER BY status, created_at, id LIMIT $2) AS c",
    ),
    count_dead_since: Statement::new(
        "SELECT count(*) AS n FROM (SELECT 1 FROM jadpo_deliveries \
        WHERE status = 'dead' AND finished_at >= $1 LIMIT $2) AS c",
    ),
    oldest_pending: Statement::new(
        "SELECT min(created_at) AS oldest FROM jadpo_deliveries WHERE status = 'pending'",
    ),
    custom_plans: Statement::new(""),
    dead_groups: Statement::new(
        "SELECT subscriber, last_failure, count(*) AS n, max(finished_at) AS newest \
        FROM (SELECT subscriber, last_failure, finished_at FROM jadpo_deliveries \
        WHERE status = 'dead' ORDER BY created_at DESC, id DESC LIMIT $2) AS d \
        GROUP BY subscriber, last_failure ORDER BY n DESC, subscriber, last_failure LIMIT $1",
    ),
};
