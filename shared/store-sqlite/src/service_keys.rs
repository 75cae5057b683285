//! Service-key statements: only verifiers are stored; scopes as text separated by spaces.

use jadpo_store_sql::tables::service_keys;
use jadpo_store_sql::{ServiceKeySql, sql};

const KEY: &str =
    "SELECT id, service, scopes, issued_at, expires_at, revoked_at FROM jadpo_service_keys";

/// The service-key statements.
pub(crate) static SERVICE_KEYS: ServiceKeySql = ServiceKeySql {
    key_insert: sql!(
        service_keys::KeyInsert,
        "INSERT INTO jadpo_service_keys (id, service, verifier, issued_at, expires_at, scopes) \
        VALUES ($id, $service, $verifier, $issued_at, $expires_at, $scopes)",
    ),
    key_find_live: sql!(
        service_keys::KeyFindLive,
        "SELECT service, scopes FROM jadpo_service_keys WHERE verifier = $verifier \
        AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $now)",
    ),
    keys_list: sql!(
        service_keys::KeysList,
        const_format::concatcp!(KEY, " ORDER BY issued_at DESC, id DESC")
    ),
    key_get: sql!(service_keys::KeyGet, const_format::concatcp!(KEY, " WHERE id = $id")),
    key_revoke: sql!(
        service_keys::KeyRevoke,
        "UPDATE jadpo_service_keys SET revoked_at = $now WHERE id = $id AND revoked_at IS NULL",
    ),
};
