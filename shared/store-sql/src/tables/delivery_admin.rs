//! `DeliveryAdminSql`: the slots of the delivery admin role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for operator changes to deliveries.
    pub struct DeliveryAdminSql {
        /// Returns the delivery joined with its event (the columns a delivery is read from), locked for
        /// the transaction where the dialect can.
        get_locked(id),
        /// Pending or dead → pending, attempts 0, due now, not held.
        retry(id, now),
        /// Pending or dead → discarded.
        discard(id, now, why),
    }
}
