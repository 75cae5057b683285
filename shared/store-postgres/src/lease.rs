//! Lease statements for the leased tables.

use jadpo_core::lease::{LeaseDialect, LeaseSql, LeaseTable};

use crate::PgStore;

/// `jadpo_housekeeping`'s lease statements.
pub static HOUSEKEEPING: LeaseSql = LeaseSql {
    ensure: Some("INSERT INTO jadpo_housekeeping (name) VALUES ($1) ON CONFLICT (name) DO NOTHING"),
    acquire: "UPDATE jadpo_housekeeping SET lease_owner = $2, lease_expires_at = $4, \
        lease_generation = lease_generation + 1 WHERE name = $1 \
        AND (lease_owner IS NULL OR lease_expires_at <= $3) RETURNING lease_generation",
    renew: "UPDATE jadpo_housekeeping SET lease_expires_at = $5 WHERE name = $1 \
        AND lease_owner = $2 AND lease_generation = $3 AND lease_expires_at > $4",
    release: "UPDATE jadpo_housekeeping SET lease_owner = NULL, lease_expires_at = NULL \
        WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3",
    fence: "SELECT 1 AS held FROM jadpo_housekeeping WHERE name = $1 AND lease_owner = $2 \
        AND lease_generation = $3 AND lease_expires_at > $4 FOR UPDATE",
};

/// `jadpo_schedules`'s lease statements.
pub static SCHEDULES: LeaseSql = LeaseSql {
    // Rows are created by the tick pass from the declaration before anyone leases them.
    ensure: None,
    acquire: "UPDATE jadpo_schedules SET lease_owner = $2, lease_expires_at = $4, \
        lease_generation = lease_generation + 1 WHERE name = $1 \
        AND (lease_owner IS NULL OR lease_expires_at <= $3) RETURNING lease_generation",
    renew: "UPDATE jadpo_schedules SET lease_expires_at = $5 WHERE name = $1 \
        AND lease_owner = $2 AND lease_generation = $3 AND lease_expires_at > $4",
    release: "UPDATE jadpo_schedules SET lease_owner = NULL, lease_expires_at = NULL \
        WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3",
    fence: "SELECT 1 AS held FROM jadpo_schedules WHERE name = $1 AND lease_owner = $2 \
        AND lease_generation = $3 AND lease_expires_at > $4 FOR UPDATE",
};

impl LeaseDialect for PgStore {
    fn lease_sql(&self, table: LeaseTable) -> &'static LeaseSql {
        match table {
            LeaseTable::Housekeeping => &HOUSEKEEPING,
            LeaseTable::Schedules => &SCHEDULES,
        }
    }
}
