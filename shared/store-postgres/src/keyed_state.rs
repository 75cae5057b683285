//! Keyed-state statements (PostgreSQL): `jadpo_keyed_state`. A takeover and a fenced write each lock the row; the one that waits re-reads it before deciding (read committed), so neither acts on a lease the other changed.

use jadpo_store_sql::tables::keyed_state;
use jadpo_store_sql::{KeyedStateSql, sql};

const STATE: &str = "SELECT kind, name, value, encoding, version, lease_owner, lease_expires_at, \
    lease_generation, updated_at FROM jadpo_keyed_state";

/// The keyed-state statements.
pub(crate) static KEYED_STATE: KeyedStateSql = KeyedStateSql {
    ensure: sql!(
        keyed_state::Ensure,
        "INSERT INTO jadpo_keyed_state (kind, name, created_at, updated_at) \
        VALUES ($kind, $name, $now, $now) ON CONFLICT (kind, name) DO NOTHING",
    ),
    claim: sql!(
        keyed_state::Claim,
        "UPDATE jadpo_keyed_state SET lease_owner = $owner, lease_expires_at = $expires_at, \
        lease_generation = lease_generation + 1 WHERE kind = $kind AND name = $name \
        AND (lease_owner IS NULL OR lease_expires_at <= $now) \
        RETURNING lease_generation, value, encoding, version",
    ),
    extend: sql!(
        keyed_state::Extend,
        "UPDATE jadpo_keyed_state SET lease_expires_at = $expires_at WHERE kind = $kind \
        AND name = $name AND lease_owner = $owner AND lease_generation = $generation \
        AND lease_expires_at > $now",
    ),
    write: sql!(
        keyed_state::Write,
        "UPDATE jadpo_keyed_state SET value = $value, encoding = $encoding, \
        version = version + 1, updated_at = $now WHERE kind = $kind AND name = $name \
        AND lease_owner = $owner AND lease_generation = $generation \
        AND lease_expires_at > $now AND version = $version",
    ),
    release: sql!(
        keyed_state::Release,
        "UPDATE jadpo_keyed_state SET lease_owner = NULL, lease_expires_at = NULL \
        WHERE kind = $kind AND name = $name AND lease_owner = $owner \
        AND lease_generation = $generation",
    ),
    get: sql!(
        keyed_state::Get,
        const_format::concatcp!(STATE, " WHERE kind = $kind AND name = $name"),
    ),
    list: sql!(
        keyed_state::List,
        const_format::concatcp!(STATE, " WHERE kind = $kind ORDER BY name LIMIT $limit"),
    ),
};
