//! `jadpo check`'s use case: the schema the migrations make, compared with the snapshot committed
//! beside them and with a live database, each difference a finding that says what to do.
//!
//! Three comparisons, per store and dialect:
//! * the declaration with the schema the migrations make: a table the declaration places in the
//!   store that no migration creates (`placement.not_created`);
//! * that schema with the committed snapshot: a snapshot missing (`snapshot.missing`), older than
//!   a migration this build ships (`migration.out_of_date`, naming the migration), or otherwise
//!   different (`snapshot.<drift>`: a migration's result changed);
//! * a live database with the snapshot: something a migration the database has not applied
//!   makes (`migration.out_of_date`), a system table its declaration does not place there
//!   (`placement.unplaced`, a notice: such a store keeps working), or drift by hand
//!   (`database.<drift>`: a column added, dropped, renamed or retyped, an index missing).
//!
//! Every finding but a notice fails the check. Building a schema takes an empty scratch store of
//! the dialect ([`build_snapshot`]); finding one is the caller's (the CLI's) job.

use std::collections::BTreeMap;

use jadpo_core::model::file_field::FileField;
use jadpo_core::ports::FileStore;
use jadpo_core::{Store, StoreError};
use jadpo_schema::migrate::{AppliedMigration, Ledger, MigrateError, MigrationCatalog};
use jadpo_schema::snapshot::{Drift, LEDGER_TABLES, Provenance, Snapshot, diff, made_by};
use jadpo_schema::table::TableSchema;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Fails the check.
    Error,
    /// Reported; the check still passes.
    Notice,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Notice => "notice",
        }
    }
}

/// One thing `jadpo check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `placement.not_created`, `snapshot.column_added`, `migration.out_of_date`, …
    pub code: String,
    pub severity: Severity,
    pub store: String,
    /// `postgres` or `sqlite`.
    pub dialect: String,
    /// What is wrong, in one sentence.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

/// What one store is checked against: the schema its migrations make and what made each part.
pub struct Expected<'a> {
    pub store: &'a str,
    pub dialect: &'a str,
    /// The migrations' schema, built on a scratch store.
    pub built: &'a Snapshot,
    pub provenance: &'a Provenance,
    /// The tables the declaration places in this store.
    pub placed: &'a [&'a str],
}

impl Expected<'_> {
    /// A finding about this store.
    pub fn finding(
        &self,
        code: String,
        severity: Severity,
        message: String,
        fix: String,
    ) -> Finding {
        Finding {
            code,
            severity,
            store: self.store.to_owned(),
            dialect: self.dialect.to_owned(),
            message,
            fix,
        }
    }

    fn label(&self) -> String {
        format!("store {} ({})", self.store, self.dialect)
    }
}

/// Every table of `store` with its shape, the ledgers left out.
pub async fn describe(
    store: &dyn jadpo_core::ports::SchemaIntrospection,
) -> Result<Vec<TableSchema>, StoreError> {
    let mut out = Vec::new();
    for name in store.schema_tables().await? {
        if LEDGER_TABLES.contains(&name.as_str()) {
            continue;
        }
        if let Some(table) = store.schema_table(&name).await? {
            out.push(table);
        }
    }
    Ok(out)
}

/// The highest version of each ledger `catalog` reaches (`jadpo`, `workflow`).
pub fn versions(catalog: &MigrationCatalog) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for m in catalog.all() {
        let v = out.entry(m.ledger.name().to_owned()).or_insert(0);
        *v = (*v).max(m.version);
    }
    out
}

/// The snapshot of what `catalog` makes, applied to `scratch`, an empty store of its dialect.
pub async fn build_snapshot(
    scratch: &dyn Store,
    catalog: &MigrationCatalog,
    store: &str,
) -> Result<Snapshot, MigrateError> {
    if !scratch.migrations_applied().await?.is_empty() {
        return Err(MigrateError::from(StoreError::invalid(
            "building a snapshot needs an empty scratch database; this one has migrations",
        )));
    }
    crate::migrate::apply(scratch, catalog).await?;
    let tables = describe(scratch).await?;
    Ok(Snapshot::new(store, scratch.dialect().name(), versions(catalog), tables))
}

/// The declaration against the migrations: each placed table they make.
pub fn check_placement(e: &Expected<'_>) -> Vec<Finding> {
    let missing = e.placed.iter().filter(|t| e.built.table(t).is_none());
    missing
        .map(|table| {
            e.finding(
                "placement.not_created".into(),
                Severity::Error,
                format!(
                    "{}: the declaration places {table} here, and no migration creates it",
                    e.label()
                ),
                "add a migration that creates it (a new jadpo_ table comes with the runtime \
                 release that needs it: deploy the migrations of that release)"
                    .into(),
            )
        })
        .collect()
}

/// The migrations' schema against the committed snapshot (`None`: no file).
pub fn check_snapshot(e: &Expected<'_>, committed: Option<&Snapshot>, path: &str) -> Vec<Finding> {
    let Some(snapshot) = committed else {
        return vec![e.finding(
            "snapshot.missing".into(),
            Severity::Error,
            format!("{}: there is no snapshot at {path}", e.label()),
            "run `jadpo snapshot`, review the file and commit it".into(),
        )];
    };
    let drifts = diff(&snapshot.tables, &e.built.tables);
    let mut out = Vec::new();
    let mut newer: BTreeMap<(String, u32, String), Vec<String>> = BTreeMap::new();
    for drift in drifts {
        let made = added_item(&drift).and_then(|item| {
            let by = made_by(e.provenance, &item)?;
            let taken = snapshot.migrations.get(&by.0).copied().unwrap_or(0);
            (by.1 > taken).then(|| (by.clone(), item))
        });
        match made {
            Some((by, item)) => newer.entry(by).or_default().push(item),
            None => out.push(e.finding(
                format!("snapshot.{}", drift.code()),
                Severity::Error,
                format!(
                    "{}: the migrations make a schema the snapshot does not: {drift}",
                    e.label()
                ),
                snapshot_fix(&drift),
            )),
        }
    }
    for ((ledger, version, name), items) in newer {
        out.push(e.finding(
            "migration.out_of_date".into(),
            Severity::Error,
            format!(
                "{}: the snapshot predates {ledger} migration {version} ({name}), which adds {}",
                e.label(),
                items.join(", ")
            ),
            format!(
                "review {ledger} migration {version}, run `jadpo snapshot` and commit the file; \
                 apply it to each database with `jadpo migrate apply`"
            ),
        ));
    }
    out
}

/// What a live database holds against the committed snapshot, given its ledger.
pub fn check_live(
    e: &Expected<'_>,
    snapshot: &Snapshot,
    live: &[TableSchema],
    applied: &[AppliedMigration],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut pending: BTreeMap<(String, u32, String), Vec<String>> = BTreeMap::new();
    for drift in diff(&snapshot.tables, live) {
        if let Drift::TableAdded { table } = &drift {
            if table.starts_with("jadpo_") && !e.placed.contains(&table.as_str()) {
                out.push(unplaced(e, table));
                continue;
            }
        }
        let unapplied = drift.missing_item().and_then(|item| {
            let by = made_by(e.provenance, &item)?;
            let ledger = Ledger::from_name(&by.0)?;
            let done = applied.iter().any(|a| a.ledger == ledger && a.version == by.1);
            (!done).then(|| (by.clone(), item))
        });
        match unapplied {
            Some((by, item)) => pending.entry(by).or_default().push(item),
            None => out.push(e.finding(
                format!("database.{}", drift.code()),
                Severity::Error,
                format!("{}: the database differs from the snapshot: {drift}", e.label()),
                live_fix(&drift),
            )),
        }
    }
    for ((ledger, version, name), items) in pending {
        out.push(e.finding(
            "migration.out_of_date".into(),
            Severity::Error,
            format!(
                "{}: the database has not applied {ledger} migration {version} ({name}), which \
                 adds {}",
                e.label(),
                items.join(", ")
            ),
            "run `jadpo migrate apply` (the deploy step does)".into(),
        ));
    }
    out
}

/// Each declared file field of store `e.store` whose count trigger is not installed: rows
/// changed there would not count their files, and housekeeping could delete bytes a record holds.
pub async fn check_file_triggers(
    e: &Expected<'_>,
    store: &dyn FileStore,
    fields: &[&FileField],
) -> Result<Vec<Finding>, StoreError> {
    let mut out = Vec::new();
    for field in fields {
        if !store.file_trigger_exists(field).await? {
            out.push(e.finding(
                "files.no_trigger".into(),
                Severity::Error,
                format!(
                    "{}: file field {} has no count trigger, so the files its rows hold are not \
                     counted and their bytes could be deleted",
                    e.label(),
                    field.name()
                ),
                "run `jadpo migrate apply` (the deploy step does): it installs the trigger and \
                 counts the files the table's rows hold"
                    .into(),
            ));
        }
    }
    Ok(out)
}

/// A `jadpo_` table the declaration does not place in this store: left by a release that made
/// every table in every store, or by a feature since removed.
fn unplaced(e: &Expected<'_>, table: &str) -> Finding {
    e.finding(
        "placement.unplaced".into(),
        Severity::Notice,
        format!(
            "{}: {table} is here, and the declaration does not place it in this store (nothing \
             reads or writes it)",
            e.label()
        ),
        format!(
            "keep it, or drop it deliberately: `jadpo migrate drop-unplaced --store {}` (it \
             refuses a table that holds rows)",
            e.store
        ),
    )
}

/// What to do when the migrations make what the snapshot does not have: a system table is the
/// declaration's placement having changed; anything else a migration's result.
fn snapshot_fix(drift: &Drift) -> String {
    match drift {
        Drift::TableAdded { table } | Drift::TableMissing { table }
            if table.starts_with("jadpo_") =>
        {
            "the declaration places the runtime's tables differently now (a feature declared, \
             removed or moved): run `jadpo snapshot` and commit the file with the declaration"
                .into()
        }
        _ => "a released migration must not change: restore it and add a new one; if the \
              change is meant, run `jadpo snapshot` and commit the file with it"
            .into(),
    }
}

/// What an operator does about drift made by hand.
fn live_fix(drift: &Drift) -> String {
    match drift {
        Drift::ColumnAdded { .. } | Drift::TableAdded { .. } | Drift::IndexAdded { .. } => {
            "drop it, or make it part of the schema: add a migration that creates it, apply it, \
             and run `jadpo snapshot`"
                .into()
        }
        Drift::ColumnRenamed { from, .. } => format!("rename it back to {from}"),
        Drift::IndexMissing { .. } | Drift::TableMissing { .. } | Drift::ColumnDropped { .. } => {
            "recreate it as its migration made it (`jadpo migrate sql` prints each migration), \
             or restore the database"
                .into()
        }
        _ => "change it back to the snapshot's definition with ALTER TABLE, or add a migration \
              that makes the change and run `jadpo snapshot`"
            .into(),
    }
}

/// What a drift from the snapshot to the built schema adds: the item the built schema has.
fn added_item(drift: &Drift) -> Option<String> {
    match drift {
        Drift::TableAdded { table } => Some(table.clone()),
        Drift::ColumnAdded { table, column, .. } => Some(format!("{table}.{column}")),
        Drift::IndexAdded { table, index } => Some(format!("{table}:{index}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
