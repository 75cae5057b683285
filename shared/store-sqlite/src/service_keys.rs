//! Service-key statements: only verifiers are stored; scopes as text separated by spaces.

use jadpo_store_sql::{ServiceKeySql, Statement};

const KEY: &str =
    "SELECT id, service, scopes, issued_at, expires_at, revoked_at FROM jadpo_service_keys";

/// The service-key statements.
pub(crate) static SERVICE_KEYS: ServiceKeySql = ServiceKeySql {
    key_insert: Statement::new(
        "INSERT INTO jadpo_service_keys (id, service, verifier, issued_at, expires_at, scopes) \
        VALUES ($1, $2, $3, $4, $5, $6)",
    ),
    key_find_live: Statement::new(
        "SELECT service, scopes FROM jadpo_service_keys WHERE verifier = $1 \
        AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
    ),
    keys_list: Statement::new(const_format::concatcp!(KEY, " ORDER BY issued_at DESC, id DESC")),
    key_get: Statement::new(const_format::concatcp!(KEY, " WHERE id = $1")),
    key_revoke: Statement::new(
        "UPDATE jadpo_service_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
    ),
};
