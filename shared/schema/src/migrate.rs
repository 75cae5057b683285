//! Migrations under two ledgers, and the pure logic that decides what to apply.
//!
//! * The **workflow** ledger is the specification's `invariant_schema_migrations`, in each
//!   dialect's shape: the workflow store's built-in migrations (SQLite v1–v3, PostgreSQL v1–v4),
//!   then the application's own, appended with versions that continue after the built-ins.
//! * The **jadpo** ledger is `jadpo_migrations`: the runtime's own `jadpo_*` system tables.
//!
//! `jadpo_migrations` also records the SHA-256 checksum of *every* migration Jadpo applied, in
//! both ledgers (its `ledger` column says which), because the spec's ledger has no checksum
//! column and its shape is part of the contract. A migration whose text changed after it was
//! applied is refused before anything runs. A workflow version found in the spec's ledger but not
//! in ours (a database created before Jadpo managed it) is *adopted*: its checksum is recorded
//! from the text this build ships, as the spec's "pre-ledger databases are adopted safely" asks.
//!
//! **Placement.** A store holds only the system tables of the features its declaration places
//! there (`app::placement`). The jadpo ledger's migrations stay whole files with one checksum,
//! but a catalog [`with_placement`](MigrationCatalog::with_placement) runs only each migration's
//! statements of those features (and of the workflow store, which every store holds), and the
//! ledger records which features each migration ran for (`jadpo_migrations.features`; `NULL`,
//! the legacy form, means every feature). A feature placed later — a first schedule declared —
//! gets its tables by running the statements it was not given, in version order
//! ([`Step::extends`]).
//!
//! Adapters implement the `MigrationStore` role (locking, the ledgers' SQL, one transaction per
//! migration); `jadpo-engine`'s `migrate::apply` and `migrate::status` are what the CLI and the
//! local runner call. This module is the pure part: catalogs, checksums, the plan.

mod statements;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::dialect::Dialect;
use crate::placement::{Feature, features_text, parse_features};
pub use statements::{Statement, attribute, created_function, items, split};

/// Which ledger a migration belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ledger {
    /// The workflow store's schema, recorded in `invariant_schema_migrations`.
    Workflow,
    /// Jadpo's own system tables, recorded in `jadpo_migrations`.
    Jadpo,
}

impl Ledger {
    /// The value of `jadpo_migrations.ledger` for this ledger.
    pub fn name(self) -> &'static str {
        match self {
            Self::Workflow => "workflow",
            Self::Jadpo => "jadpo",
        }
    }

    /// Parses [`Ledger::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "workflow" => Some(Self::Workflow),
            "jadpo" => Some(Self::Jadpo),
            _ => None,
        }
    }

    /// The ledger table whose rows say a version is applied.
    pub fn table(self) -> &'static str {
        match self {
            Self::Workflow => "invariant_schema_migrations",
            Self::Jadpo => "jadpo_migrations",
        }
    }
}

impl fmt::Display for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One migration: a version, a name and the SQL that applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The ledger it is recorded in.
    pub ledger: Ledger,
    /// Its version, unique within the ledger; applied in ascending order.
    pub version: u32,
    /// A short name (`initial`, `session_active_run`), stored as the description.
    pub name: String,
    /// The SQL, one or more `;`-separated statements.
    pub sql: String,
}

impl Migration {
    /// A migration.
    pub fn new(ledger: Ledger, version: u32, name: &str, sql: &str) -> Self {
        Self { ledger, version, name: name.to_owned(), sql: sql.to_owned() }
    }

    /// The SHA-256 of the SQL text, lower-case hex; what the ledger compares.
    pub fn checksum(&self) -> String {
        Sha256::digest(self.sql.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The statements to run for `features` (`None`: the whole text): those of the workflow
    /// store and of each feature in the set. A workflow-ledger migration always runs whole.
    pub fn sql_for(&self, features: Option<&BTreeSet<Feature>>) -> Result<String, MigrateError> {
        let Some(features) = features.filter(|_| self.ledger == Ledger::Jadpo) else {
            return Ok(self.sql.clone());
        };
        self.joined(|f| f.is_none_or(|f| features.contains(&f)))
    }

    /// The statements of `features` only (none of the workflow store's): what a store that ran
    /// this migration without them still needs.
    pub fn sql_of_features(&self, features: &BTreeSet<Feature>) -> Result<String, MigrateError> {
        self.joined(|f| f.is_some_and(|f| features.contains(&f)))
    }

    /// The statements whose feature `keep` accepts, as one text (empty when none is).
    fn joined(&self, keep: impl Fn(Option<Feature>) -> bool) -> Result<String, MigrateError> {
        let kept: Vec<&str> =
            self.statements()?.into_iter().filter(|s| keep(s.feature)).map(|s| s.sql).collect();
        Ok(if kept.is_empty() { String::new() } else { format!("{};\n", kept.join(";\n\n")) })
    }

    /// Its statements, each with its feature.
    pub fn statements(&self) -> Result<Vec<Statement<'_>>, MigrateError> {
        attribute(&self.sql).map_err(|e| {
            MigrateError::InvalidCatalog(format!(
                "{} migration {} ({}): {e}",
                self.ledger, self.version, self.name
            ))
        })
    }

    /// The features with statements in it.
    pub fn features(&self) -> Result<BTreeSet<Feature>, MigrateError> {
        Ok(self.statements()?.into_iter().filter_map(|s| s.feature).collect())
    }
}

/// Every migration one store should have, in apply order, for one dialect.
#[derive(Debug, Clone)]
pub struct MigrationCatalog {
    dialect: Dialect,
    workflow: Vec<Migration>,
    builtin_workflow: usize,
    jadpo: Vec<Migration>,
    /// The features whose jadpo-ledger statements run (`None`: every statement).
    placement: Option<BTreeSet<Feature>>,
}

impl MigrationCatalog {
    /// The built-in catalog of an adapter: the workflow store's migrations and Jadpo's.
    pub fn builtin(
        dialect: Dialect,
        workflow: Vec<Migration>,
        jadpo: Vec<Migration>,
    ) -> Result<Self, MigrateError> {
        check_sequence(Ledger::Workflow, &workflow, 0)?;
        check_sequence(Ledger::Jadpo, &jadpo, 0)?;
        Ok(Self { dialect, builtin_workflow: workflow.len(), workflow, jadpo, placement: None })
    }

    /// Runs only the jadpo-ledger statements of `features` (and the workflow store's): the
    /// catalog of a store whose declaration places those features there. Refused when a
    /// statement belongs to no feature.
    pub fn with_placement(mut self, features: BTreeSet<Feature>) -> Result<Self, MigrateError> {
        for m in &self.jadpo {
            m.statements()?;
        }
        self.placement = Some(features);
        Ok(self)
    }

    /// The features placed, `None` when every statement runs.
    pub fn placement(&self) -> Option<&BTreeSet<Feature>> {
        self.placement.as_ref()
    }

    /// Appends the application's own workflow-ledger migrations after the built-in ones.
    ///
    /// Their versions must continue after the last built-in version and strictly increase, as the
    /// spec's SQLite example does (built-in 1–3, then the application's 4).
    pub fn with_app_migrations(mut self, app: Vec<Migration>) -> Result<Self, MigrateError> {
        let last = self.workflow.last().map_or(0, |m| m.version);
        if let Some(bad) = app.iter().find(|m| m.ledger != Ledger::Workflow) {
            return Err(MigrateError::InvalidCatalog(format!(
                "application migration {} ({}) must be in the workflow ledger",
                bad.version, bad.name
            )));
        }
        check_sequence(Ledger::Workflow, &app, last)?;
        self.workflow.extend(app);
        Ok(self)
    }

    /// The dialect the SQL is written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// All migrations in apply order: the workflow ledger's, then Jadpo's.
    pub fn all(&self) -> impl Iterator<Item = &Migration> {
        self.workflow.iter().chain(self.jadpo.iter())
    }

    /// How many of the workflow ledger's migrations are built in (the rest are the app's).
    pub fn builtin_workflow_count(&self) -> usize {
        self.builtin_workflow
    }
}

fn check_sequence(ledger: Ledger, list: &[Migration], after: u32) -> Result<(), MigrateError> {
    let mut previous = after;
    for m in list {
        if m.ledger != ledger {
            return Err(MigrateError::InvalidCatalog(format!(
                "migration {} ({}) is in the {} ledger, listed with the {ledger} ledger's",
                m.version, m.name, m.ledger
            )));
        }
        if m.version <= previous {
            return Err(MigrateError::InvalidCatalog(format!(
                "{ledger} migration {} ({}) must have a version above {previous}",
                m.version, m.name
            )));
        }
        previous = m.version;
    }
    Ok(())
}

/// A migration the database says is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    pub ledger: Ledger,
    pub version: u32,
    /// The checksum Jadpo recorded, or `None` for a version only the spec's ledger has.
    pub checksum: Option<String>,
    /// When it was applied.
    pub applied_at: DateTime<Utc>,
    /// The features it ran for; `None` when it ran whole (every feature, the legacy form).
    pub features: Option<BTreeSet<Feature>>,
}

/// Where one migration stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationState {
    /// Applied, and its text is what this build ships.
    Applied {
        /// When.
        at: DateTime<Utc>,
    },
    /// In the spec's ledger but not yet checksummed by Jadpo; `apply` adopts it.
    Unverified {
        /// When.
        at: DateTime<Utc>,
    },
    /// Not applied yet.
    Pending,
    /// Applied, but this build's text differs: refused.
    Changed {
        /// When it was applied.
        at: DateTime<Utc>,
    },
    /// Applied in the database, unknown to this build (a newer build applied it).
    Unknown {
        /// When.
        at: DateTime<Utc>,
    },
}

impl MigrationState {
    /// A one-word label for tables and JSON.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Applied { .. } => "applied",
            Self::Unverified { .. } => "unverified",
            Self::Pending => "pending",
            Self::Changed { .. } => "changed",
            Self::Unknown { .. } => "unknown",
        }
    }

    /// When it was applied, if it was.
    pub fn applied_at(&self) -> Option<DateTime<Utc>> {
        match self {
            Self::Applied { at }
            | Self::Unverified { at }
            | Self::Changed { at }
            | Self::Unknown { at } => Some(*at),
            Self::Pending => None,
        }
    }
}

/// One line of `jadpo migrate status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    pub ledger: Ledger,
    pub version: u32,
    /// Name (empty for a version this build does not know).
    pub name: String,
    /// Where it stands.
    pub state: MigrationState,
}

/// Compares the catalog with what the database has applied.
pub fn compare(catalog: &MigrationCatalog, applied: &[AppliedMigration]) -> Vec<MigrationStatus> {
    let mut recorded: BTreeMap<(Ledger, u32), &AppliedMigration> =
        applied.iter().map(|a| ((a.ledger, a.version), a)).collect();
    let mut out = Vec::new();
    for m in catalog.all() {
        let state = match recorded.remove(&(m.ledger, m.version)) {
            None => MigrationState::Pending,
            Some(a) => match &a.checksum {
                None => MigrationState::Unverified { at: a.applied_at },
                Some(sum) if *sum == m.checksum() => MigrationState::Applied { at: a.applied_at },
                Some(_) => MigrationState::Changed { at: a.applied_at },
            },
        };
        out.push(MigrationStatus {
            ledger: m.ledger,
            version: m.version,
            name: m.name.clone(),
            state,
        });
    }
    for ((ledger, version), a) in recorded {
        out.push(MigrationStatus {
            ledger,
            version,
            name: String::new(),
            state: MigrationState::Unknown { at: a.applied_at },
        });
    }
    out
}

/// What [`apply`] will do, decided before anything runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan<'a> {
    /// Versions only the spec's ledger has: record their checksums.
    pub adopt: Vec<&'a Migration>,
    /// Migrations to run, or to run further, in order.
    pub apply: Vec<Step<'a>>,
}

/// One migration to run in its own transaction: whole, for the features placed, or further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<'a> {
    pub migration: &'a Migration,
    /// What runs (empty when none of its statements is for this store: it is still recorded).
    pub sql: String,
    /// What `jadpo_migrations.features` says after it (`None`: every feature).
    pub features: Option<String>,
    /// `Some(recorded)`: the migration ran for the features `recorded`; this step runs the
    /// statements of the features placed since, and changes nothing if the ledger no longer
    /// names that set (another run got there first).
    pub extends: Option<BTreeSet<Feature>>,
}

impl Step<'_> {
    /// Whether a further run still starts where the ledger stands: it names (as
    /// `jadpo_migrations.features` does, `ran_for`) exactly the features the step extends.
    pub fn starts_from(&self, ran_for: Option<&str>) -> bool {
        ran_for.and_then(parse_features).as_ref() == self.extends.as_ref()
    }

    /// `(ledger, version, name)`, as reports give it.
    pub fn id(&self) -> (Ledger, u32, String) {
        (self.migration.ledger, self.migration.version, self.migration.name.clone())
    }
}

/// The step that runs `m` from scratch under the catalog's placement.
fn first_run<'a>(catalog: &MigrationCatalog, m: &'a Migration) -> Result<Step<'a>, MigrateError> {
    let placement = catalog.placement().filter(|_| m.ledger == Ledger::Jadpo);
    Ok(Step {
        migration: m,
        sql: m.sql_for(placement)?,
        features: placement.map(features_text),
        extends: None,
    })
}

/// The step that gives an applied jadpo migration the statements of features placed since it
/// ran, if it has any.
fn further_run<'a>(
    catalog: &MigrationCatalog,
    m: &'a Migration,
    recorded: Option<&BTreeSet<Feature>>,
) -> Result<Option<Step<'a>>, MigrateError> {
    let Some(recorded) = recorded.filter(|_| m.ledger == Ledger::Jadpo) else {
        return Ok(None);
    };
    let wanted: BTreeSet<Feature> =
        catalog.placement().cloned().unwrap_or_else(|| Feature::ALL.into_iter().collect());
    let missing: BTreeSet<Feature> = wanted.difference(recorded).copied().collect();
    let sql = m.sql_of_features(&missing)?;
    if sql.is_empty() {
        return Ok(None);
    }
    let after =
        catalog.placement().map(|placed| features_text(&recorded.union(placed).copied().collect()));
    Ok(Some(Step { migration: m, sql, features: after, extends: Some(recorded.clone()) }))
}

/// Decides what to apply, refusing edited, unknown or out-of-order histories.
pub fn plan<'a>(
    catalog: &'a MigrationCatalog,
    applied: &[AppliedMigration],
) -> Result<Plan<'a>, MigrateError> {
    let statuses = compare(catalog, applied);
    if let Some(unknown) =
        statuses.iter().find(|s| matches!(s.state, MigrationState::Unknown { .. }))
    {
        return Err(MigrateError::UnknownApplied {
            ledger: unknown.ledger,
            version: unknown.version,
        });
    }
    let mut out = Plan::default();
    let mut highest_applied: BTreeMap<Ledger, u32> = BTreeMap::new();
    for a in applied {
        let entry = highest_applied.entry(a.ledger).or_default();
        *entry = (*entry).max(a.version);
    }
    let recorded: BTreeMap<(Ledger, u32), Option<&BTreeSet<Feature>>> =
        applied.iter().map(|a| ((a.ledger, a.version), a.features.as_ref())).collect();
    for (status, m) in statuses.iter().zip(catalog.all()) {
        match status.state {
            MigrationState::Applied { .. } => {
                let ran_for = recorded.get(&(m.ledger, m.version)).copied().flatten();
                out.apply.extend(further_run(catalog, m, ran_for)?);
            }
            MigrationState::Unverified { .. } => out.adopt.push(m),
            MigrationState::Pending => {
                let highest = highest_applied.get(&m.ledger).copied().unwrap_or(0);
                if m.version < highest {
                    return Err(MigrateError::OutOfOrder {
                        ledger: m.ledger,
                        version: m.version,
                        name: m.name.clone(),
                        highest,
                    });
                }
                out.apply.push(first_run(catalog, m)?);
            }
            MigrationState::Changed { .. } => {
                return Err(MigrateError::ChecksumMismatch {
                    ledger: m.ledger,
                    version: m.version,
                    name: m.name.clone(),
                });
            }
            MigrationState::Unknown { .. } => {}
        }
    }
    Ok(out)
}

/// What dropping the tables of features a store no longer holds removes, in one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unplaced {
    /// The tables, each before any table it refers to.
    pub tables: Vec<String>,
    /// The functions the features' migrations made (PostgreSQL's audit trail has some).
    pub functions: Vec<String>,
    /// The features: the ledger stops recording them as run, so that placing one again
    /// creates its tables anew.
    pub features: BTreeSet<Feature>,
}

impl Unplaced {
    /// What `jadpo_migrations.features` says of a migration once these features are dropped:
    /// what it ran for (`None`: every feature) without them.
    pub fn narrowed(&self, ran_for: Option<&BTreeSet<Feature>>) -> String {
        let every: BTreeSet<Feature> = Feature::ALL.into_iter().collect();
        let kept = ran_for.unwrap_or(&every).difference(&self.features).copied().collect();
        features_text(&kept)
    }

    /// The functions `catalog`'s jadpo migrations made for these features.
    pub fn functions_of(&mut self, catalog: &MigrationCatalog) -> Result<(), MigrateError> {
        for m in catalog.all().filter(|m| m.ledger == Ledger::Jadpo) {
            for s in m.statements()? {
                let name = s
                    .feature
                    .filter(|f| self.features.contains(f))
                    .and_then(|_| created_function(s.sql));
                if let Some(name) = name.filter(|n| !self.functions.contains(n)) {
                    self.functions.push(name);
                }
            }
        }
        Ok(())
    }
}

/// What [`apply`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ApplyReport {
    /// `(ledger, version, name)` of each migration run now.
    pub applied: Vec<(Ledger, u32, String)>,
    /// `(ledger, version, name)` of each pre-existing version adopted.
    pub adopted: Vec<(Ledger, u32, String)>,
    /// `(ledger, version, name)` of each applied migration run further, for features placed
    /// since it ran.
    pub extended: Vec<(Ledger, u32, String)>,
}

/// Why migrating failed. Nothing after the failing migration was applied.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The database failed: a `jadpo_core::StoreError`, which converts into this variant.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// An applied migration's text differs from this build's.
    #[error(
        "{ledger} migration {version} ({name}) was edited after it was applied: its checksum differs \
         from the one recorded in jadpo_migrations. Applied migrations are immutable: restore its \
         original text and add a new migration with the change"
    )]
    ChecksumMismatch { ledger: Ledger, version: u32, name: String },
    /// The database has a version this build does not ship.
    #[error(
        "the database has {ledger} migration {version}, which this build does not know: \
         it was applied by a newer build; deploy that build or restore a compatible backup"
    )]
    UnknownApplied { ledger: Ledger, version: u32 },
    /// A migration below the highest applied version is missing.
    #[error(
        "{ledger} migration {version} ({name}) is not applied, but version {highest} is: \
         migrations must be applied in order; give it a version above {highest}"
    )]
    OutOfOrder {
        ledger: Ledger,
        version: u32,
        name: String,
        /// Highest applied version of the ledger.
        highest: u32,
    },
    /// The catalog itself is malformed (versions not increasing, wrong ledger).
    #[error("invalid migration list: {0}")]
    InvalidCatalog(String),
    /// An operator's change refused, nothing changed; the message says why.
    #[error("{0}")]
    Refused(String),
}

#[cfg(test)]
mod tests;
