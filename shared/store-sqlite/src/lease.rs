//! Lease statements for the leased tables: every leased table has the same lease columns
//! (`lease_owner`, `lease_expires_at`, `lease_generation`) keyed by `name`, so one macro writes
//! each table's statements. The fence reads the row inside the writer's transaction; SQLite's
//! single writer already serializes the fenced write and a takeover.

use jadpo_core::model::lease::LeaseTable;
use jadpo_store_sql::{LeaseSql, Statement};

macro_rules! lease_sql {
    ($table:literal, $ensure:expr) => {
        LeaseSql {
            ensure: $ensure,
            take: Statement::new(concat!(
                "UPDATE ",
                $table,
                " SET lease_owner = $2, lease_expires_at = $4, ",
                "lease_generation = lease_generation + 1 WHERE name = $1 ",
                "AND (lease_owner IS NULL OR lease_expires_at <= $3) RETURNING lease_generation"
            )),
            extend: Statement::new(concat!(
                "UPDATE ",
                $table,
                " SET lease_expires_at = $5 WHERE name = $1 ",
                "AND lease_owner = $2 AND lease_generation = $3 AND lease_expires_at > $4"
            )),
            give_up: Statement::new(concat!(
                "UPDATE ",
                $table,
                " SET lease_owner = NULL, lease_expires_at = NULL ",
                "WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3"
            )),
            fence: Statement::new(concat!(
                "SELECT 1 AS held FROM ",
                $table,
                " WHERE name = $1 AND lease_owner = $2 ",
                "AND lease_generation = $3 AND lease_expires_at > $4"
            )),
        }
    };
}

/// `jadpo_housekeeping`'s lease statements; the row is created on first use.
pub(crate) static HOUSEKEEPING: LeaseSql = lease_sql!(
    "jadpo_housekeeping",
    Some(Statement::new(
        "INSERT INTO jadpo_housekeeping (name) VALUES ($1) ON CONFLICT (name) DO NOTHING"
    ))
);

/// `jadpo_schedules`'s lease statements; rows are created by the tick pass from the
/// declaration before anyone leases them.
pub(crate) static SCHEDULES: LeaseSql = lease_sql!("jadpo_schedules", None);

/// The statements of each leased table.
pub(crate) fn leases(table: LeaseTable) -> &'static LeaseSql {
    match table {
        LeaseTable::Housekeeping => &HOUSEKEEPING,
        LeaseTable::Schedules => &SCHEDULES,
    }
}
