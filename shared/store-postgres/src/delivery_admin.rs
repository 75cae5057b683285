//! Statements behind operators' changes to deliveries (PostgreSQL).

use crate::pipeline::DELIVERY_COLUMNS;
use jadpo_store_sql::{DeliveryAdminSql, Statement};

/// Operator changes to deliveries.
pub static ADMIN: DeliveryAdminSql = DeliveryAdminSql {
    get_locked: Statement::new(const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = $1 FOR UPDATE OF d"
    )),
    retry: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2, \
        enqueued_at = NULL, finished_at = NULL, held_connection = NULL, held_at = NULL \
        WHERE id = $1 AND status IN ('pending', 'dead')",
    ),
    discard: Statement::new(
        "UPDATE jadpo_deliveries SET status = 'discarded', finished_at = $2, \
        last_failure = $3, enqueued_at = NULL WHERE id = $1 AND status IN ('pending', 'dead')",
    ),
};
