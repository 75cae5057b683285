//! Service-key statements (PostgreSQL): `jadpo_service_keys`.

use jadpo_store_sql::{ServiceKeySql, Statement};

/// Service-key statements.
pub static SERVICE_KEYS: ServiceKeySql = ServiceKeySql {
    key_insert: Statement::new(
        "INSERT INTO jadpo_service_keys (id, service, verifier, issued_at, expires_at) \
        VALUES ($1, $2, $3, $4, $5)",
    ),
    key_find_live: Statement::new(
        "SELECT service FROM jadpo_service_keys WHERE verifier = $1 \
        AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
    ),
};
