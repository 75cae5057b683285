//! The one place rusqlite's errors become [`StoreError`]s.

use jadpo_core::{StoreError, StoreErrorKind};
use rusqlite::ErrorCode;
use rusqlite::ffi;

/// Translates a driver error into the kind callers act on.
pub(crate) fn translate(err: rusqlite::Error) -> StoreError {
    let kind = match &err {
        rusqlite::Error::SqliteFailure(code, _) => match code.code {
            ErrorCode::ConstraintViolation => match code.extended_code {
                ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                    StoreErrorKind::Conflict
                }
                _ => StoreErrorKind::Constraint,
            },
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::DiskFull
            | ErrorCode::OutOfMemory => StoreErrorKind::Unavailable,
            ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => StoreErrorKind::Internal,
            _ => StoreErrorKind::Invalid,
        },
        rusqlite::Error::QueryReturnedNoRows => StoreErrorKind::NotFound,
        rusqlite::Error::SqlInputError { .. }
        | rusqlite::Error::InvalidParameterCount(..)
        | rusqlite::Error::InvalidParameterName(_)
        | rusqlite::Error::InvalidColumnName(_)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::ExecuteReturnedResults
        | rusqlite::Error::MultipleStatement
        | rusqlite::Error::ToSqlConversionFailure(_) => StoreErrorKind::Invalid,
        _ => StoreErrorKind::Internal,
    };
    StoreError::new(kind, format!("sqlite: {err}")).with_source(err)
}
