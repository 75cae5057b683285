//! Service-key statements (SQLite): `jadpo_service_keys`.

use jadpo_core::dialect::{AuthDialect, AuthSql};

use crate::SqliteStore;

/// Service-key statements.
pub static AUTH_SQL: AuthSql = AuthSql {
    key_insert: "INSERT INTO jadpo_service_keys (id, service, verifier, issued_at, expires_at) \
        VALUES ($1, $2, $3, $4, $5)",
    key_find_live: "SELECT service FROM jadpo_service_keys WHERE verifier = $1 \
        AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
};

impl AuthDialect for SqliteStore {
    fn auth_sql(&self) -> &'static AuthSql {
        &AUTH_SQL
    }
}
