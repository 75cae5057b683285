//! Statements behind operators' changes to deliveries (SQLite).

use crate::SqliteStore;
use crate::pipeline::DELIVERY_COLUMNS;

/// Operator changes to deliveries.
pub static ADMIN: jadpo_core::dialect::DeliveryAdminSql = jadpo_core::dialect::DeliveryAdminSql {
    get_locked: const_format::concatcp!(
        "SELECT ",
        DELIVERY_COLUMNS,
        " FROM jadpo_deliveries d JOIN jadpo_outbox o ON o.id = d.outbox_id WHERE d.id = $1"
    ),
    retry: "UPDATE jadpo_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2, \
        enqueued_at = NULL, finished_at = NULL, held_connection = NULL, held_at = NULL \
        WHERE id = $1 AND status IN ('pending', 'dead')",
    discard: "UPDATE jadpo_deliveries SET status = 'discarded', finished_at = $2, \
        last_failure = $3, enqueued_at = NULL WHERE id = $1 AND status IN ('pending', 'dead')",
};

impl jadpo_core::dialect::DeliveryAdminDialect for SqliteStore {
    fn delivery_admin_sql(&self) -> &'static jadpo_core::dialect::DeliveryAdminSql {
        &ADMIN
    }
}
