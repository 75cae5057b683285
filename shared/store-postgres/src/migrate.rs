//! Migrations on PostgreSQL: the built-in catalog, the ledgers, the advisory lock, and the
//! schema script for DBA-managed pipelines.
//!
//! A migration run holds a session-level advisory lock on one connection from start to end, so a
//! second `jadpo migrate apply` at the same moment waits, then reads the ledgers and finds nothing
//! to do. If the process dies, the connection closes and the server releases the lock.

use async_trait::async_trait;
use deadpool_postgres::Object;
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::file_field::FileField;
use jadpo_core::ports::{MigrationSession, MigrationStore};
use jadpo_core::sql::identifier;
use jadpo_core::{Dialect, SqlValue, StoreError};
use jadpo_schema::migrate::{
    AppliedMigration, Ledger, MigrateError, Migration, MigrationCatalog, Step, Unplaced,
};
use jadpo_schema::placement::{Feature, features_text};
use std::collections::BTreeSet;

use crate::Postgres;
use crate::error::{DriverError, translate};
use crate::tx::{execute, query};

/// The advisory-lock key every Jadpo migration run takes ("jadpomig" in ASCII).
const LOCK_KEY: i64 = 0x6a61_6470_6f6d_6967;

const LEDGERS: &str = "
CREATE TABLE IF NOT EXISTS invariant_schema_migrations (
    version     INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE TABLE IF NOT EXISTS jadpo_migrations (
    ledger     TEXT NOT NULL,
    version    INTEGER NOT NULL,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    features   TEXT,
    PRIMARY KEY (ledger, version)
);
ALTER TABLE jadpo_migrations ADD COLUMN IF NOT EXISTS features TEXT;";

// Which ledgers exist: `spec` for the specification's, `jadpo` for Jadpo's checksums.
const LEDGERS_EXIST: &str = "SELECT
    count(*) FILTER (WHERE tablename = 'invariant_schema_migrations')::bigint AS spec,
    count(*) FILTER (WHERE tablename = 'jadpo_migrations')::bigint AS jadpo
    FROM pg_catalog.pg_tables WHERE schemaname = current_schema()
      AND tablename IN ('invariant_schema_migrations', 'jadpo_migrations')";

// A database whose only ledger is the specification's (made by another tool, or before Jadpo's
// ledger existed): its versions are `unverified` until `apply` adopts them.
const APPLIED_SPEC_ONLY: &str = "SELECT version, applied_at, NULL::text AS checksum
    FROM invariant_schema_migrations ORDER BY version";

const APPLIED_WORKFLOW: &str = "SELECT i.version, i.applied_at, j.checksum
    FROM invariant_schema_migrations i
    LEFT JOIN jadpo_migrations j ON j.ledger = 'workflow' AND j.version = i.version
    ORDER BY i.version";

// `features` read through the row's JSON, so that one statement (and its cached plan, whose
// result type must not change) reads a ledger made before the column as well as after.
const APPLIED_JADPO: &str = "SELECT version, applied_at, checksum,
    to_jsonb(j) ->> 'features' AS features
    FROM jadpo_migrations j WHERE ledger = 'jadpo' ORDER BY version";

const RECORD_WORKFLOW: &str =
    "INSERT INTO invariant_schema_migrations (version, description) VALUES ($1, $2)";

const RECORD_CHECKSUM: &str = "INSERT INTO jadpo_migrations (ledger, version, name, checksum,
    features) VALUES ($1, $2, $3, $4, $5)";

const RAN_FOR: &str =
    "SELECT features FROM jadpo_migrations WHERE ledger = 'jadpo' AND version = $1";

const RECORD_FEATURES: &str =
    "UPDATE jadpo_migrations SET features = $1 WHERE ledger = 'jadpo' AND version = $2";

macro_rules! workflow_migration {
    ($version:literal, $name:literal, $file:literal) => {
        Migration::new(
            Ledger::Workflow,
            $version,
            $name,
            include_str!(concat!("../../../migrations/workflow/postgres/", $file)),
        )
    };
}

/// The workflow store's built-in PostgreSQL migrations (v1–v4) and Jadpo's system tables.
pub fn builtin_catalog() -> MigrationCatalog {
    let workflow = vec![
        workflow_migration!(1, "initial", "0001_initial.sql"),
        workflow_migration!(2, "loop_state", "0002_loop_state.sql"),
        workflow_migration!(3, "session_active_run", "0003_session_active_run.sql"),
        workflow_migration!(4, "session_authority", "0004_session_authority.sql"),
    ];
    let jadpo = vec![
        Migration::new(
            Ledger::Jadpo,
            1,
            "pipeline",
            include_str!("../../../migrations/postgres/0001_pipeline.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            2,
            "command_dispatch",
            include_str!("../../../migrations/postgres/0002_command_dispatch.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            3,
            "housekeeping",
            include_str!("../../../migrations/postgres/0003_housekeeping.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            4,
            "schedules",
            include_str!("../../../migrations/postgres/0004_schedules.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            5,
            "circuit_breakers",
            include_str!("../../../migrations/postgres/0005_circuit_breakers.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            6,
            "flags",
            include_str!("../../../migrations/postgres/0006_flags.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            7,
            "audit",
            include_str!("../../../migrations/postgres/0007_audit.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            8,
            "owners",
            include_str!("../../../migrations/postgres/0008_owners.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            9,
            "service_key_scopes",
            include_str!("../../../migrations/postgres/0009_service_key_scopes.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            10,
            "user_sessions",
            include_str!("../../../migrations/postgres/0010_user_sessions.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            11,
            "sign_in_requests",
            include_str!("../../../migrations/postgres/0011_sign_in_requests.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            12,
            "sign_in_links",
            include_str!("../../../migrations/postgres/0012_sign_in_links.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            13,
            "event_actors",
            include_str!("../../../migrations/postgres/0013_event_actors.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            14,
            "passkeys",
            include_str!("../../../migrations/postgres/0014_passkeys.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            15,
            "step_records",
            include_str!("../../../migrations/postgres/0015_step_records.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            16,
            "audit_owner",
            include_str!("../../../migrations/postgres/0016_audit_owner.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            17,
            "operator_account",
            include_str!("../../../migrations/postgres/0017_operator_account.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            18,
            "encodings",
            include_str!("../../../migrations/postgres/0018_encodings.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            19,
            "files",
            include_str!("../../../migrations/postgres/0019_files.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            20,
            "console_pages",
            include_str!("../../../migrations/postgres/0020_console_pages.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            21,
            "audit_search_path",
            include_str!("../../../migrations/postgres/0021_audit_search_path.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            22,
            "append_only",
            include_str!("../../../migrations/postgres/0022_append_only.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            23,
            "uploads_and_roles",
            include_str!("../../../migrations/postgres/0023_uploads_and_roles.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            24,
            "used_tokens",
            include_str!("../../../migrations/postgres/0024_used_tokens.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            25,
            "sign_in_sources",
            include_str!("../../../migrations/postgres/0025_sign_in_sources.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            26,
            "keyed_state",
            include_str!("../../../migrations/postgres/0026_keyed_state.sql"),
        ),
        Migration::new(
            Ledger::Jadpo,
            27,
            "webhook_receipts",
            include_str!("../../../migrations/postgres/0027_webhook_receipts.sql"),
        ),
    ];
    match MigrationCatalog::builtin(Dialect::Postgres, workflow, jadpo) {
        Ok(catalog) => catalog,
        // reason: the built-in list is a constant checked by this crate's tests.
        Err(e) => unreachable!("built-in PostgreSQL migrations are malformed: {e}"),
    }
}

fn db(e: tokio_postgres::Error) -> StoreError {
    translate(DriverError::Db(e))
}

async fn applied_rows(client: &Object) -> Result<Vec<AppliedMigration>, StoreError> {
    let mut out = Vec::new();
    for (ledger, sql) in [(Ledger::Workflow, APPLIED_WORKFLOW), (Ledger::Jadpo, APPLIED_JADPO)] {
        for row in query(client, sql, &[]).await? {
            out.push(jadpo_store_sql::applied_migration(ledger, &row)?);
        }
    }
    Ok(out)
}

struct PgMigrationSession {
    client: Option<Object>,
}

impl PgMigrationSession {
    fn client(&self) -> Result<&Object, StoreError> {
        self.client.as_ref().ok_or_else(|| StoreError::internal("migration session finished"))
    }

    async fn record(&self, step: &Step<'_>) -> Result<(), StoreError> {
        let (client, m) = (self.client()?, step.migration);
        if step.extends.is_some() {
            let params = [step.features.as_deref().into(), m.version.into()];
            return execute(client, RECORD_FEATURES, &params).await.map(|_| ());
        }
        if m.ledger == Ledger::Workflow {
            execute(client, RECORD_WORKFLOW, &[m.version.into(), m.name.as_str().into()]).await?;
        }
        self.record_checksum(m, step.features.as_deref()).await
    }

    async fn record_checksum(
        &self,
        m: &Migration,
        features: Option<&str>,
    ) -> Result<(), StoreError> {
        let params = [
            m.ledger.name().into(),
            m.version.into(),
            m.name.as_str().into(),
            m.checksum().into(),
            features.into(),
        ];
        execute(self.client()?, RECORD_CHECKSUM, &params).await.map(|_| ())
    }

    /// Whether the ledger still stands where `step` starts from.
    async fn is_due(&self, step: &Step<'_>) -> Result<bool, StoreError> {
        if step.extends.is_none() {
            return Ok(!self.is_recorded(step.migration).await?);
        }
        let rows = query(self.client()?, RAN_FOR, &[step.migration.version.into()]).await?;
        let ran_for = rows.first().map(|r| r.get_opt_str("features")).transpose()?.flatten();
        Ok(step.starts_from(ran_for))
    }

    async fn is_recorded(&self, m: &Migration) -> Result<bool, StoreError> {
        let sql = match m.ledger {
            Ledger::Workflow => {
                "SELECT 1 AS one FROM invariant_schema_migrations WHERE version = $1"
            }
            Ledger::Jadpo => {
                "SELECT 1 AS one FROM jadpo_migrations WHERE ledger = 'jadpo' AND version = $1"
            }
        };
        Ok(!query(self.client()?, sql, &[SqlValue::from(m.version)]).await?.is_empty())
    }

    async fn apply_in_tx(&self, step: &Step<'_>) -> Result<bool, StoreError> {
        let m = step.migration;
        if !self.is_due(step).await? {
            return Ok(false);
        }
        self.client()?.batch_execute(&step.sql).await.map_err(|e| {
            let e = db(e);
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
        self.record(step).await?;
        Ok(true)
    }

    async fn drop_in_tx(&self, unplaced: &Unplaced) -> Result<(), StoreError> {
        let client = self.client()?;
        for table in &unplaced.tables {
            let sql = format!("DROP TABLE IF EXISTS {} CASCADE", identifier(table)?);
            client.batch_execute(&sql).await.map_err(db)?;
        }
        for function in &unplaced.functions {
            let sql = format!("DROP FUNCTION IF EXISTS {} CASCADE", identifier(function)?);
            client.batch_execute(&sql).await.map_err(db)?;
        }
        for row in query(client, APPLIED_JADPO, &[]).await? {
            let ran = jadpo_store_sql::applied_migration(Ledger::Jadpo, &row)?;
            let params = [unplaced.narrowed(ran.features.as_ref()).into(), ran.version.into()];
            execute(client, RECORD_FEATURES, &params).await?;
        }
        Ok(())
    }

    async fn end_tx(&self, result: Result<bool, StoreError>) -> Result<bool, StoreError> {
        let client = self.client()?;
        match result {
            Ok(applied) => {
                client.batch_execute("COMMIT").await.map_err(db)?;
                Ok(applied)
            }
            Err(e) => {
                client.batch_execute("ROLLBACK").await.map_err(db)?;
                Err(e)
            }
        }
    }
}

impl Drop for PgMigrationSession {
    fn drop(&mut self) {
        // Not finished cleanly: close the connection so the server drops the advisory lock.
        if let Some(client) = self.client.take() {
            let _ = Object::take(client);
        }
    }
}

#[async_trait]
impl MigrationSession for PgMigrationSession {
    async fn applied(&mut self) -> Result<Vec<AppliedMigration>, StoreError> {
        applied_rows(self.client()?).await
    }

    async fn apply(&mut self, step: &Step<'_>) -> Result<bool, StoreError> {
        self.client()?.batch_execute("BEGIN").await.map_err(db)?;
        let result = self.apply_in_tx(step).await;
        self.end_tx(result).await
    }

    async fn drop_unplaced(&mut self, unplaced: &Unplaced) -> Result<(), StoreError> {
        self.client()?.batch_execute("BEGIN").await.map_err(db)?;
        let result = self.drop_in_tx(unplaced).await.map(|()| true);
        self.end_tx(result).await.map(|_| ())
    }

    async fn adopt(&mut self, migration: &Migration) -> Result<(), StoreError> {
        self.client()?.batch_execute("BEGIN").await.map_err(db)?;
        let result = self.record_checksum(migration, None).await.map(|()| true);
        self.end_tx(result).await.map(|_| ())
    }

    async fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        let client = self.client.take().ok_or_else(|| StoreError::internal("finished twice"))?;
        match execute(&client, "SELECT pg_advisory_unlock($1)", &[LOCK_KEY.into()]).await {
            Ok(_) => Ok(()),
            Err(e) => {
                let _ = Object::take(client);
                Err(e)
            }
        }
    }
}

#[async_trait]
impl MigrationStore for Postgres {
    fn migration_catalog(&self) -> MigrationCatalog {
        builtin_catalog()
    }

    async fn migration_session(&self) -> Result<Box<dyn MigrationSession>, StoreError> {
        let client = self.client().await?;
        // From here on, dropping the session closes the connection, releasing the lock.
        let session = PgMigrationSession { client: Some(client) };
        let c = session.client()?;
        execute(c, "SELECT pg_advisory_lock($1)", &[LOCK_KEY.into()]).await?;
        c.batch_execute(&format!("BEGIN; {LEDGERS} COMMIT;")).await.map_err(db)?;
        Ok(Box::new(session))
    }

    async fn migrations_applied(&self) -> Result<Vec<AppliedMigration>, StoreError> {
        let client = self.client().await?;
        let present = query(&client, LEDGERS_EXIST, &[]).await?;
        let has = |ledger: &str| -> Result<bool, StoreError> {
            Ok(present.first().map(|r| r.get_i64(ledger)).transpose()?.unwrap_or(0) > 0)
        };
        match (has("spec")?, has("jadpo")?) {
            (true, true) => applied_rows(&client).await,
            (true, false) => query(&client, APPLIED_SPEC_ONLY, &[])
                .await?
                .iter()
                .map(|row| jadpo_store_sql::applied_migration(Ledger::Workflow, row))
                .collect(),
            _ => Ok(Vec::new()),
        }
    }
}

/// The whole PostgreSQL schema as one script, for pipelines that apply SQL themselves
/// (`psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f schema.sql`).
///
/// It takes the same advisory lock as `jadpo migrate apply`, creates the ledgers, and runs each
/// migration only when its ledger does not record it, recording it as `apply` would; a migration
/// whose recorded checksum differs stops the script. A catalog with a placement runs only the
/// statements of the features placed (and the workflow store's), and gives a migration
/// recorded for fewer features the statements of the others, as `apply` does. Then it installs the audit triggers of the
/// `audited` entities, and the count trigger of each of `file_fields` whose trigger is missing
/// (counting the files its table's rows hold, as the first install does), as `apply`'s caller
/// does. Running it twice changes nothing.
pub fn schema_sql(
    catalog: &MigrationCatalog,
    audited: &[&AuditSpec],
    file_fields: &[&FileField],
) -> Result<String, StoreError> {
    if catalog.dialect() != Dialect::Postgres {
        return Err(StoreError::invalid("the schema script is for PostgreSQL migrations"));
    }
    let mut out = String::from(
        "-- Jadpo schema for PostgreSQL, generated by `jadpo migrate sql`.\n\
         -- Apply with: psql \"$DATABASE_URL\" -v ON_ERROR_STOP=1 -f schema.sql\n\
         -- Safe to run again: each migration runs only if its ledger lacks it.\n\
         -- Choose one schema owner per environment: this script or `jadpo migrate apply`.\n\
         BEGIN;\n",
    );
    out.push_str(&format!("SELECT pg_advisory_xact_lock({LOCK_KEY});\n{}\n", LEDGERS.trim()));
    for m in catalog.all() {
        out.push_str(&migration_block(m, catalog.placement())?);
    }
    if !audited.is_empty() {
        out.push_str(
            "-- The audit triggers of the store's audited entities, as `jadpo migrate apply` \
             installs them (each replaces itself).\n",
        );
    }
    for spec in audited {
        for statement in (crate::DIALECT.audit_generated.trigger_ddl)(spec) {
            out.push_str(&format!("{statement};\n"));
        }
    }
    for field in file_fields {
        out.push_str(&file_trigger_block(field));
    }
    out.push_str("COMMIT;\n");
    Ok(out)
}

/// A file field's count trigger, made and its table's files counted only if it is missing.
fn file_trigger_block(field: &FileField) -> String {
    let g = &crate::DIALECT.files_generated;
    let lock = (g.lock)(field).map(|l| format!("{l};\n")).unwrap_or_default();
    let ddl: String = (g.trigger_ddl)(field).iter().map(|s| format!("    {s};\n")).collect();
    format!(
        "-- The count trigger of file field {name}, as `jadpo migrate apply` installs it.\n\
         DO $jadpo_files$\nBEGIN\n{lock}IF ({count}) = 0 THEN\n{ddl}    {existing};\nEND IF;\n\
         END\n$jadpo_files$;\n",
        name = field.name(),
        count = (g.trigger_count)(field),
        existing = (g.count_existing)(field),
    )
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

const BODY_TAG: &str = "$jadpo_migration_sql$";

/// `sql` as a string the block can `EXECUTE`.
fn body(sql: &str) -> String {
    format!("{BODY_TAG}{sql}{BODY_TAG}")
}

fn migration_block(
    m: &Migration,
    placement: Option<&BTreeSet<Feature>>,
) -> Result<String, StoreError> {
    if m.sql.contains(BODY_TAG) || m.sql.contains("$jadpo_block$") {
        return Err(StoreError::invalid(format!(
            "{} migration {} ({}) contains a reserved dollar-quote tag",
            m.ledger, m.version, m.name
        )));
    }
    let invalid = |e: MigrateError| StoreError::invalid(e.to_string());
    let (ledger, version, name, sum) =
        (quote(m.ledger.name()), m.version, quote(&m.name), quote(&m.checksum()));
    let placement = placement.filter(|_| m.ledger == Ledger::Jadpo);
    let features = placement.map_or("NULL".to_owned(), |p| quote(&features_text(p)));
    let applied_check = match m.ledger {
        Ledger::Workflow => {
            format!("EXISTS (SELECT 1 FROM invariant_schema_migrations WHERE version = {version})")
        }
        Ledger::Jadpo => "recorded IS NOT NULL".to_owned(),
    };
    let record_spec_ledger = match m.ledger {
        Ledger::Workflow => format!(
            "    INSERT INTO invariant_schema_migrations (version, description) VALUES ({version}, {name});\n"
        ),
        Ledger::Jadpo => String::new(),
    };
    let message = quote(&format!(
        "{} migration {} ({}) was edited after it was applied: its checksum differs",
        m.ledger, m.version, m.name
    ));
    let further = match m.ledger {
        Ledger::Jadpo => further_block(m, placement, &features).map_err(invalid)?,
        Ledger::Workflow => String::new(),
    };
    Ok(format!(
        "\n-- {} migration {version}: {}\nDO $jadpo_block$\nDECLARE recorded TEXT; ran_for TEXT[]; ran BOOLEAN;\nBEGIN\n  \
         SELECT checksum, string_to_array(features, ',') INTO recorded, ran_for FROM jadpo_migrations WHERE ledger = {ledger} AND version = {version};\n  \
         IF recorded IS NOT NULL AND recorded <> {sum} THEN\n    RAISE EXCEPTION {message};\n  END IF;\n  \
         IF NOT ({applied_check}) THEN\n    EXECUTE {};\n{record_spec_ledger}  END IF;\n  \
         IF recorded IS NULL THEN\n    \
         INSERT INTO jadpo_migrations (ledger, version, name, checksum, features) VALUES ({ledger}, {version}, {name}, {sum}, {features});\n  \
         {further}END IF;\nEND\n$jadpo_block$;\n",
        m.ledger,
        m.name,
        body(&m.sql_for(placement).map_err(invalid)?)
    ))
}

/// The `ELSIF` arm of a jadpo migration's block: recorded as run for some features only, it runs
/// the statements of each placed feature not among them, then records what it now ran for, as
/// `apply`'s further run does.
fn further_block(
    m: &Migration,
    placement: Option<&BTreeSet<Feature>>,
    features_after: &str,
) -> Result<String, MigrateError> {
    let wanted: BTreeSet<Feature> =
        placement.cloned().unwrap_or_else(|| Feature::ALL.into_iter().collect());
    // As `apply` does: the ledger changes only when some statement ran.
    let mut out = String::from("ELSIF ran_for IS NOT NULL THEN\n    ran := false;\n");
    for feature in wanted {
        let sql = m.sql_of_features(&BTreeSet::from([feature]))?;
        let run = match sql.is_empty() {
            true => String::new(),
            false => format!(" EXECUTE {}; ran := true;", body(&sql)),
        };
        out.push_str(&format!(
            "    IF NOT ({f} = ANY (ran_for)) THEN{run} ran_for := ran_for || {f}::text; END IF;\n",
            f = quote(feature.as_str())
        ));
    }
    let after = match placement {
        Some(_) => "array_to_string(ran_for, ',')".to_owned(),
        None => features_after.to_owned(),
    };
    out.push_str(&format!(
        "    IF ran THEN\n      UPDATE jadpo_migrations SET features = {after} WHERE ledger = 'jadpo' AND version = {};\n    END IF;\n  ",
        m.version
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_is_the_specs_v1_to_v4() {
        let c = builtin_catalog();
        let versions: Vec<_> = c.all().map(|m| (m.ledger, m.version)).collect();
        let mut expected: Vec<_> = (1..=4).map(|v| (Ledger::Workflow, v)).collect();
        expected.extend((1..=27).map(|v| (Ledger::Jadpo, v)));
        assert_eq!(versions, expected);
        assert!(c.all().all(|m| !m.sql.trim().is_empty()));
    }

    #[test]
    fn schema_script_guards_every_migration_and_quotes_names() {
        let sql = schema_sql(&builtin_catalog(), &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sql.matches("DO $jadpo_block$").count(), 4 + 27);
        assert!(sql.starts_with("-- Jadpo schema"));
        assert!(sql.contains("pg_advisory_xact_lock"));
        assert!(sql.trim_end().ends_with("COMMIT;"));
        assert_eq!(quote("it's"), "'it''s'");
    }

    #[test]
    fn reserved_dollar_tags_are_refused() {
        let bad = Migration::new(Ledger::Jadpo, 1, "x", "SELECT $jadpo_migration_sql$;");
        assert!(migration_block(&bad, None).is_err());
    }
}
