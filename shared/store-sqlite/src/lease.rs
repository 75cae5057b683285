//! Lease statements for the leased tables: every leased table has the same lease columns
//! (`lease_owner`, `lease_expires_at`, `lease_generation`) keyed by `name`, so one macro writes
//! each table's statements. The fence reads the row inside the writer's transaction; SQLite's
//! single writer already serializes the fenced write and a takeover.

use jadpo_core::model::lease::LeaseTable;
use jadpo_store_sql::tables::lease;
use jadpo_store_sql::{LeaseSql, sql};

macro_rules! lease_sql {
    ($table:literal, $ensure:expr) => {
        LeaseSql {
            ensure: $ensure,
            take: sql!(lease::Take, concat!(
                "UPDATE ",
                $table,
                " SET lease_owner = $owner, lease_expires_at = $expires_at, ",
                "lease_generation = lease_generation + 1 WHERE name = $key ",
                "AND (lease_owner IS NULL OR lease_expires_at <= $now) RETURNING lease_generation"
            )),
            extend: sql!(lease::Extend, concat!(
                "UPDATE ",
                $table,
                " SET lease_expires_at = $expires_at WHERE name = $key ",
                "AND lease_owner = $owner AND lease_generation = $generation AND lease_expires_at > $now"
            )),
            give_up: sql!(lease::GiveUp, concat!(
                "UPDATE ",
                $table,
                " SET lease_owner = NULL, lease_expires_at = NULL ",
                "WHERE name = $key AND lease_owner = $owner AND lease_generation = $generation"
            )),
            fence: sql!(lease::Fence, concat!(
                "SELECT 1 AS held FROM ",
                $table,
                " WHERE name = $key AND lease_owner = $owner ",
                "AND lease_generation = $generation AND lease_expires_at > $now"
            )),
        }
    };
}

/// `jadpo_housekeeping`'s lease statements; the row is created on first use.
pub(crate) static HOUSEKEEPING: LeaseSql = lease_sql!(
    "jadpo_housekeeping",
    Some(sql!(
        lease::Ensure,
        "INSERT INTO jadpo_housekeeping (name) VALUES ($key) ON CONFLICT (name) DO NOTHING"
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
