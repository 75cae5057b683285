//! Migrations on SQLite: the built-in catalog, the ledgers' SQL and one transaction per migration.
//!
//! The session holds the store's connection for the whole run, so other tasks of this process
//! wait; another process is kept out by `BEGIN IMMEDIATE`, and every migration re-checks its
//! ledger inside its own transaction before it runs.

use std::sync::Arc;

use async_trait::async_trait;
use jadpo_core::ports::{MigrationSession, MigrationStore};
use jadpo_core::sql::identifier;
use jadpo_core::{Dialect, SqlValue, StoreError};
use jadpo_schema::migrate::{
    AppliedMigration, Ledger, Migration, MigrationCatalog, Step, Unplaced,
};
use rusqlite::Connection;
use tokio::sync::OwnedMutexGuard;

use crate::Sqlite;
use crate::error::translate;
use crate::tx::{execute, query};

const LEDGERS: &str = "
CREATE TABLE IF NOT EXISTS invariant_schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS jadpo_migrations (
    ledger     TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    checksum   TEXT    NOT NULL,
    applied_at INTEGER NOT NULL,
    features   TEXT,
    PRIMARY KEY (ledger, version)
);";

// A ledger made before `features` was recorded gains the column (SQLite has no
// `ADD COLUMN IF NOT EXISTS`).
const LEDGER_HAS_FEATURES: &str =
    "SELECT count(*) AS n FROM pragma_table_info('jadpo_migrations') WHERE name = 'features'";
const LEDGER_ADD_FEATURES: &str = "ALTER TABLE jadpo_migrations ADD COLUMN features TEXT";

// Which ledgers exist: `spec` for the specification's, `jadpo` for Jadpo's checksums.
const LEDGERS_EXIST: &str = "SELECT
    count(*) FILTER (WHERE name = 'invariant_schema_migrations') AS spec,
    count(*) FILTER (WHERE name = 'jadpo_migrations') AS jadpo
    FROM sqlite_schema WHERE type = 'table'";

// A database whose only ledger is the specification's (made by another tool, or before Jadpo's
// ledger existed): its versions are `unverified` until `apply` adopts them.
const APPLIED_SPEC_ONLY: &str = "SELECT version, applied_at, NULL AS checksum
    FROM invariant_schema_migrations ORDER BY version";

const APPLIED_WORKFLOW: &str = "SELECT i.version AS version, i.applied_at AS applied_at,
    j.checksum AS checksum
    FROM invariant_schema_migrations i
    LEFT JOIN jadpo_migrations j ON j.ledger = 'workflow' AND j.version = i.version
    ORDER BY i.version";

const APPLIED_JADPO: &str = "SELECT version, applied_at, checksum, features
    FROM jadpo_migrations WHERE ledger = 'jadpo' ORDER BY version";

// A ledger made before `features` was recorded, read as every feature run.
const APPLIED_BEFORE_FEATURES: &str = "SELECT version, applied_at, checksum,
    NULL AS features FROM jadpo_migrations WHERE ledger = 'jadpo' ORDER BY version";

const RECORD_WORKFLOW: &str =
    "INSERT INTO invariant_schema_migrations (version, applied_at) VALUES ($1, $2)";

const RECORD_CHECKSUM: &str = "INSERT INTO jadpo_migrations (ledger, version, name, checksum,
    applied_at, features) VALUES ($1, $2, $3, $4, $5, $6)";

const RAN_FOR: &str =
    "SELECT features FROM jadpo_migrations WHERE ledger = 'jadpo' AND version = $1";

const RECORD_FEATURES: &str =
    "UPDATE jadpo_migrations SET features = $1 WHERE ledger = 'jadpo' AND version = $2";

/// The workflow store's built-in SQLite migrations (v1–v3) and Jadpo's system tables.
pub fn builtin_catalog() -> MigrationCatalog {
    let workflow = vec![
        Migration::new(
            Ledger::Workflow,
            1,
            "initial",
            include_str!("../../../migrations/workflow/sqlite/0001_initial.sql"),
        ),
        Migration::new(
            Ledger::Workflow,
            2,
            "session_active_run",
            include_str!("../../../migrations/workflow/sqlite/0002_session_active_run.sql"),
        ),
        Migration::new(
            Ledger::Workflow,
            3,
            "session_authority",
            include_str!("../../../migrations/workflow/sqlite/0003_session_authority.sql"),
        ),
    ];
    let jadpo = vec![
        Migration::new(
            Ledger::Jadpo,
            1,
            "pipeline",
            include_str!("../../../migrations/sqlite/0001_pipeline.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            2,
            "command_dispatch",
            include_str!("../../../migrations/sqlite/0002_command_dispatch.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            3,
            "housekeeping",
            include_str!("../../../migrations/sqlite/0003_housekeeping.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            4,
            "schedules",
            include_str!("../../../migrations/sqlite/0004_schedules.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            5,
            "circuit_breakers",
            include_str!("../../../migrations/sqlite/0005_circuit_breakers.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            6,
            "flags",
            include_str!("../../../migrations/sqlite/0006_flags.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            7,
            "audit",
            include_str!("../../../migrations/sqlite/0007_audit.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            8,
            "owners",
            include_str!("../../../migrations/sqlite/0008_owners.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            9,
            "service_key_scopes",
            include_str!("../../../migrations/sqlite/0009_service_key_scopes.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            10,
            "user_sessions",
            include_str!("../../../migrations/sqlite/0010_user_sessions.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            11,
            "sign_in_requests",
            include_str!("../../../migrations/sqlite/0011_sign_in_requests.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            12,
            "sign_in_links",
            include_str!("../../../migrations/sqlite/0012_sign_in_links.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            13,
            "event_actors",
            include_str!("../../../migrations/sqlite/0013_event_actors.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            14,
            "passkeys",
            include_str!("../../../migrations/sqlite/0014_passkeys.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            15,
            "step_records",
            include_str!("../../../migrations/sqlite/0015_step_records.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            16,
            "audit_owner",
            include_str!("../../../migrations/sqlite/0016_audit_owner.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            17,
            "operator_account",
            include_str!("../../../migrations/sqlite/0017_operator_account.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            18,
            "encodings",
            include_str!("../../../migrations/sqlite/0018_encodings.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            19,
            "files",
            include_str!("../../../migrations/sqlite/0019_files.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            20,
            "console_pages",
            include_str!("../../../migrations/sqlite/0020_console_pages.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            21,
            "audit_search_path",
            include_str!("../../../migrations/sqlite/0021_audit_search_path.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            22,
            "append_only",
            include_str!("../../../migrations/sqlite/0022_append_only.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            23,
            "uploads_and_roles",
            include_str!("../../../migrations/sqlite/0023_uploads_and_roles.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            24,
            "used_tokens",
            include_str!("../../../migrations/sqlite/0024_used_tokens.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            25,
            "sign_in_sources",
            include_str!("../../../migrations/sqlite/0025_sign_in_sources.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            26,
            "keyed_state",
            include_str!("../../../migrations/sqlite/0026_keyed_state.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            27,
            "webhook_receipts",
            include_str!("../../../migrations/sqlite/0027_webhook_receipts.sql"),
        ),
    ];
    match MigrationCatalog::builtin(Dialect::Sqlite, workflow, jadpo) {
        Ok(catalog) => catalog,
        // reason: the built-in list is a constant checked by this crate's tests.
        Err(e) => unreachable!("built-in SQLite migrations are malformed: {e}"),
    }
}

fn applied_rows(conn: &Connection) -> Result<Vec<AppliedMigration>, StoreError> {
    let has = query(conn, LEDGER_HAS_FEATURES, &[])?;
    let jadpo = match has.first().map(|r| r.get_i64("n")).transpose()?.unwrap_or(0) {
        0 => APPLIED_BEFORE_FEATURES,
        _ => APPLIED_JADPO,
    };
    let mut out = Vec::new();
    for (ledger, sql) in [(Ledger::Workflow, APPLIED_WORKFLOW), (Ledger::Jadpo, jadpo)] {
        for row in query(conn, sql, &[])? {
            out.push(jadpo_store_sql::applied_migration(ledger, &row)?);
        }
    }
    Ok(out)
}

/// What each of the specification's SQLite migrations leaves behind, in version order: a
/// database made before the ledger existed (its tables there, no ledger) has the versions whose
/// marks are all present recorded in the specification's ledger, then `apply` adopts them
/// (`unverified` → checksummed) instead of running their `CREATE TABLE`s again, and runs the rest.
const SPEC_MARKS: [(u32, &str); 3] = [
    (
        1,
        "SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name = 'workflow_executions'",
    ),
    (2, "SELECT count(*) AS n FROM pragma_table_info('sessions') WHERE name = 'active_run_id'"),
    (3, "SELECT count(*) AS n FROM pragma_table_info('sessions') WHERE name = 'context_revision'"),
];

fn record_pre_ledger_versions(
    conn: &Connection,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    for (version, mark) in SPEC_MARKS {
        let present = query(conn, mark, &[])?.first().map(|r| r.get_i64("n")).transpose()?;
        if present.unwrap_or(0) == 0 {
            break; // the versions are a prefix: a later mark without an earlier one is not theirs
        }
        execute(conn, RECORD_WORKFLOW, &[SqlValue::from(version), SqlValue::Timestamp(now)])?;
    }
    Ok(())
}

fn is_recorded(conn: &Connection, m: &Migration) -> Result<bool, StoreError> {
    let sql = match m.ledger {
        Ledger::Workflow => "SELECT 1 AS one FROM invariant_schema_migrations WHERE version = $1",
        Ledger::Jadpo => {
            "SELECT 1 AS one FROM jadpo_migrations WHERE ledger = 'jadpo' AND version = $1"
        }
    };
    Ok(!query(conn, sql, &[SqlValue::from(m.version)])?.is_empty())
}

struct SqliteMigrationSession {
    conn: OwnedMutexGuard<crate::group::Conn>,
    clock: Arc<dyn jadpo_core::Clock>,
}

impl SqliteMigrationSession {
    fn record(&self, step: &Step<'_>) -> Result<(), StoreError> {
        let m = step.migration;
        if step.extends.is_some() {
            let params = [step.features.as_deref().into(), m.version.into()];
            return execute(&self.conn, RECORD_FEATURES, &params).map(|_| ());
        }
        let now = SqlValue::Timestamp(self.clock.now());
        if m.ledger == Ledger::Workflow {
            execute(&self.conn, RECORD_WORKFLOW, &[m.version.into(), now.clone()])?;
        }
        self.record_checksum(m, now, step.features.as_deref())
    }

    fn record_checksum(
        &self,
        m: &Migration,
        now: SqlValue,
        features: Option<&str>,
    ) -> Result<(), StoreError> {
        let params = [
            m.ledger.name().into(),
            m.version.into(),
            m.name.as_str().into(),
            m.checksum().into(),
            now,
            features.into(),
        ];
        execute(&self.conn, RECORD_CHECKSUM, &params).map(|_| ())
    }

    /// Whether the ledger still stands where `step` starts from.
    fn is_due(&self, step: &Step<'_>) -> Result<bool, StoreError> {
        if step.extends.is_none() {
            return Ok(!is_recorded(&self.conn, step.migration)?);
        }
        let rows = query(&self.conn, RAN_FOR, &[step.migration.version.into()])?;
        let ran_for = rows.first().map(|r| r.get_opt_str("features")).transpose()?.flatten();
        Ok(step.starts_from(ran_for))
    }

    fn apply_in_tx(&self, step: &Step<'_>) -> Result<bool, StoreError> {
        let m = step.migration;
        if !self.is_due(step)? {
            return Ok(false);
        }
        self.conn.execute_batch(&step.sql).map_err(|e| {
            let e = translate(e);
            StoreError::new(
                e.kind(),
                format!(
                    "{} migration {} ({}) failed: {}",
                    m.ledger,
                    m.version,
                    m.name,
                    e.message()
                ),
            )
        })?;
        self.record(step)?;
        Ok(true)
    }

    /// SQLite has no functions of Jadpo's to drop.
    fn drop_in_tx(&self, unplaced: &Unplaced) -> Result<(), StoreError> {
        for table in &unplaced.tables {
            let sql = format!("DROP TABLE IF EXISTS {}", identifier(table)?);
            self.conn.execute_batch(&sql).map_err(translate)?;
        }
        for row in query(&self.conn, APPLIED_JADPO, &[])? {
            let ran = jadpo_store_sql::applied_migration(Ledger::Jadpo, &row)?;
            let params = [unplaced.narrowed(ran.features.as_ref()).into(), ran.version.into()];
            execute(&self.conn, RECORD_FEATURES, &params)?;
        }
        Ok(())
    }

    fn in_transaction<T>(
        &self,
        work: impl FnOnce(&Self) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(translate)?;
        match work(self) {
            Ok(value) => {
                self.conn.execute_batch("COMMIT").map_err(translate)?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

#[async_trait]
impl MigrationSession for SqliteMigrationSession {
    async fn applied(&mut self) -> Result<Vec<AppliedMigration>, StoreError> {
        applied_rows(&self.conn)
    }

    async fn apply(&mut self, step: &Step<'_>) -> Result<bool, StoreError> {
        self.in_transaction(|s| s.apply_in_tx(step))
    }

    async fn drop_unplaced(&mut self, unplaced: &Unplaced) -> Result<(), StoreError> {
        self.in_transaction(|s| s.drop_in_tx(unplaced))
    }

    async fn adopt(&mut self, migration: &Migration) -> Result<(), StoreError> {
        let now = SqlValue::Timestamp(self.clock.now());
        self.in_transaction(|s| s.record_checksum(migration, now, None))
    }

    async fn finish(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}

#[async_trait]
impl MigrationStore for Sqlite {
    fn migration_catalog(&self) -> MigrationCatalog {
        builtin_catalog()
    }

    async fn migration_session(&self) -> Result<Box<dyn MigrationSession>, StoreError> {
        let conn = crate::group::idle(&self.conn).await;
        conn.execute_batch("BEGIN IMMEDIATE").map_err(translate)?;
        let pre_ledger = match query(&conn, LEDGERS_EXIST, &[]) {
            Ok(rows) => rows.first().map(|r| r.get_i64("spec")).transpose()?.unwrap_or(0) == 0,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        };
        conn.execute_batch(LEDGERS).map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            translate(e)
        })?;
        let add_features = || {
            if pre_ledger {
                record_pre_ledger_versions(&conn, self.clock.now())?;
            }
            let has = query(&conn, LEDGER_HAS_FEATURES, &[])?;
            if has.first().map(|r| r.get_i64("n")).transpose()?.unwrap_or(0) == 0 {
                conn.execute_batch(LEDGER_ADD_FEATURES).map_err(translate)?;
            }
            conn.execute_batch("COMMIT").map_err(translate)
        };
        if let Err(e) = add_features() {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        Ok(Box::new(SqliteMigrationSession { conn, clock: Arc::clone(&self.clock) }))
    }

    async fn migrations_applied(&self) -> Result<Vec<AppliedMigration>, StoreError> {
        let conn = crate::group::idle(&self.conn).await;
        let present = query(&conn, LEDGERS_EXIST, &[])?;
        let has = |ledger: &str| -> Result<bool, StoreError> {
            Ok(present.first().map(|r| r.get_i64(ledger)).transpose()?.unwrap_or(0) > 0)
        };
        match (has("spec")?, has("jadpo")?) {
            (true, true) => applied_rows(&conn),
            (true, false) => query(&conn, APPLIED_SPEC_ONLY, &[])?
                .iter()
                .map(|row| jadpo_store_sql::applied_migration(Ledger::Workflow, row))
                .collect(),
            _ => Ok(Vec::new()),
        }
    }
}
