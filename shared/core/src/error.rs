//! `StoreError`: what a store operation can fail with, by the kind a caller acts on.
//!
//! Adapters translate their driver's errors into these kinds in exactly one function each, so the
//! rest of the runtime decides "retry", "report a conflict" or "give up" without knowing whether
//! PostgreSQL or SQLite answered.

use std::fmt;

/// What kind of failure it was; the part callers branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// The row or object asked for does not exist.
    NotFound,
    /// Another writer got there first: a unique key is taken, or an expected revision is stale.
    Conflict,
    /// The data broke a constraint other than uniqueness (foreign key, not null, check).
    Constraint,
    /// The database could not be reached or was busy; trying again later may work.
    Unavailable,
    /// The statement or its parameters were rejected (syntax, unknown column, type mismatch).
    Invalid,
    /// The store or the runtime is in a state it should never be in.
    Internal,
}

impl StoreErrorKind {
    fn label(self) -> &'static str {
        match self {
            Self::NotFound => "not found",
            Self::Conflict => "conflict",
            Self::Constraint => "constraint violated",
            Self::Unavailable => "database unavailable",
            Self::Invalid => "invalid statement",
            Self::Internal => "internal error",
        }
    }
}

/// A failed store operation.
#[derive(Debug, thiserror::Error)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.label(), self.message)
    }
}

impl StoreError {
    /// A new error of `kind`.
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), source: None }
    }

    /// Keeps the underlying cause, for logs.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The kind, for callers that branch on it.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The human message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether trying the same operation again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, StoreErrorKind::Unavailable)
    }

    /// Shorthand for [`StoreErrorKind::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::NotFound, message)
    }

    /// Shorthand for [`StoreErrorKind::Conflict`].
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Conflict, message)
    }

    /// Shorthand for [`StoreErrorKind::Invalid`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Invalid, message)
    }

    /// Shorthand for [`StoreErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Internal, message)
    }

    /// Shorthand for [`StoreErrorKind::Unavailable`].
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Unavailable, message)
    }
}

/// A migration fails on the database's error like any other store call.
impl From<StoreError> for jadpo_schema::migrate::MigrateError {
    fn from(e: StoreError) -> Self {
        Self::Store(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unavailable_is_retryable() {
        assert!(StoreError::unavailable("down").is_retryable());
        for e in [
            StoreError::conflict("x"),
            StoreError::not_found("x"),
            StoreError::invalid("x"),
            StoreError::internal("x"),
        ] {
            assert!(!e.is_retryable(), "{e}");
        }
    }

    #[test]
    fn display_names_the_kind_and_the_message() {
        let e = StoreError::conflict("revision 3 is stale");
        assert_eq!(e.to_string(), "conflict: revision 3 is stale");
        assert_eq!(e.kind(), StoreErrorKind::Conflict);
    }
}
