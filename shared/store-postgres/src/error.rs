//! The one place driver and pool errors become [`StoreError`]s.

use deadpool_postgres::PoolError;
use jadpo_core::{StoreError, StoreErrorKind};
use tokio_postgres::error::SqlState;

/// Everything the driver side can fail with.
#[derive(Debug)]
pub(crate) enum DriverError {
    /// tokio-postgres.
    Db(tokio_postgres::Error),
    /// deadpool (includes failing to connect).
    Pool(PoolError),
}

impl From<tokio_postgres::Error> for DriverError {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Db(e)
    }
}

/// Translates a driver error into the kind callers act on.
pub(crate) fn translate(err: DriverError) -> StoreError {
    match err {
        DriverError::Db(e) => {
            let kind = e.code().map_or_else(
                || {
                    if e.is_closed() { StoreErrorKind::Unavailable } else { connection_kind(&e) }
                },
                sql_state_kind,
            );
            let detail = e.as_db_error().map_or_else(|| e.to_string(), |db| db.to_string());
            StoreError::new(kind, format!("postgres: {detail}")).with_source(e)
        }
        DriverError::Pool(e) => {
            let kind = match &e {
                PoolError::Backend(inner) if inner.code().is_some() => {
                    inner.code().map_or(StoreErrorKind::Unavailable, sql_state_kind)
                }
                _ => StoreErrorKind::Unavailable,
            };
            StoreError::new(kind, format!("postgres connection: {e}")).with_source(e)
        }
    }
}

/// An error without an SQLSTATE: a connection or protocol failure, or a bad conversion.
fn connection_kind(e: &tokio_postgres::Error) -> StoreErrorKind {
    let text = e.to_string();
    if text.contains("error serializing") || text.contains("error deserializing") {
        StoreErrorKind::Invalid
    } else {
        StoreErrorKind::Unavailable
    }
}

fn sql_state_kind(code: &SqlState) -> StoreErrorKind {
    let class = &code.code()[..2];
    if *code == SqlState::UNIQUE_VIOLATION || *code == SqlState::EXCLUSION_VIOLATION {
        StoreErrorKind::Conflict
    } else if class == "23" {
        StoreErrorKind::Constraint
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::QUERY_CANCELED
        || matches!(class, "08" | "53" | "57")
    {
        // Connection exceptions, insufficient resources, operator intervention (shutdown).
        StoreErrorKind::Unavailable
    } else if *code == SqlState::NO_DATA_FOUND {
        StoreErrorKind::NotFound
    } else if class == "XX" {
        StoreErrorKind::Internal
    } else {
        StoreErrorKind::Invalid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_states_map_to_the_kinds_callers_act_on() {
        assert_eq!(sql_state_kind(&SqlState::UNIQUE_VIOLATION), StoreErrorKind::Conflict);
        assert_eq!(sql_state_kind(&SqlState::FOREIGN_KEY_VIOLATION), StoreErrorKind::Constraint);
        assert_eq!(sql_state_kind(&SqlState::NOT_NULL_VIOLATION), StoreErrorKind::Constraint);
        assert_eq!(
            sql_state_kind(&SqlState::T_R_SERIALIZATION_FAILURE),
            StoreErrorKind::Unavailable
        );
        assert_eq!(sql_state_kind(&SqlState::ADMIN_SHUTDOWN), StoreErrorKind::Unavailable);
        assert_eq!(sql_state_kind(&SqlState::TOO_MANY_CONNECTIONS), StoreErrorKind::Unavailable);
        assert_eq!(sql_state_kind(&SqlState::SYNTAX_ERROR), StoreErrorKind::Invalid);
        assert_eq!(sql_state_kind(&SqlState::UNDEFINED_TABLE), StoreErrorKind::Invalid);
        assert_eq!(sql_state_kind(&SqlState::INTERNAL_ERROR), StoreErrorKind::Internal);
    }
}
