//! `jadpo snapshot` and `jadpo check`: each store's schema as its migrations make it, written
//! beside the migrations and reviewed in diffs like code; and the check that the declaration,
//! the migrations, the snapshots and (when URLs are given) the live databases agree.
//!
//! Both build the schema the migrations make on a scratch database of each dialect: SQLite in
//! memory, PostgreSQL as a new database on the server `--scratch-url` (or
//! `JADPO_SCRATCH_DATABASE_URL`) names, dropped afterwards. The snapshots live in `--dir`
//! (default `migrations/snapshots` here or in the nearest folder above that has it, as git finds
//! its own), one file per dialect and store:
//! `<dir>/<dialect>/<store>.json`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use jadpo_application::Application;
use jadpo_core::{Dialect, Store};
use jadpo_engine::check::{self, Expected, Finding, Severity};
use jadpo_runtime::catalog_for;
use jadpo_runtime::scratch::Scratch;
use jadpo_schema::migrate::MigrationCatalog;
use jadpo_schema::snapshot::{Provenance, Snapshot, provenance};
use serde_json::json;

/// Where the snapshots are kept, from the project's root.
const DEFAULT_DIR: &str = "migrations/snapshots";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DialectArg {
    Postgres,
    Sqlite,
}

impl DialectArg {
    fn dialect(self) -> Dialect {
        match self {
            Self::Postgres => Dialect::Postgres,
            Self::Sqlite => Dialect::Sqlite,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// This store only (default: every store the application declares).
    #[arg(long)]
    store: Option<String>,
    /// This dialect only (default: both; PostgreSQL needs a scratch server).
    #[arg(long, value_enum)]
    dialect: Option<DialectArg>,
    /// The folder of the snapshots (default: `migrations/snapshots` in this folder or the
    /// nearest folder above it that has one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// A PostgreSQL server where a scratch database may be made and dropped (default:
    /// JADPO_SCRATCH_DATABASE_URL).
    #[arg(long)]
    scratch_url: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// One store on one dialect, with the schema its migrations make, what made each part and the
/// system tables placed there.
struct Built {
    store: String,
    dialect: Dialect,
    snapshot: Snapshot,
    provenance: Provenance,
    placed: Vec<&'static str>,
}

impl Built {
    fn expected(&self) -> Expected<'_> {
        Expected {
            store: &self.store,
            dialect: self.dialect.name(),
            built: &self.snapshot,
            provenance: &self.provenance,
            placed: &self.placed,
        }
    }
}

impl SchemaArgs {
    fn dialects(&self) -> Vec<Dialect> {
        match self.dialect {
            Some(d) => vec![d.dialect()],
            None => vec![Dialect::Postgres, Dialect::Sqlite],
        }
    }

    fn stores<'a>(&self, app: &'a Application) -> anyhow::Result<Vec<&'a str>> {
        let all: Vec<&str> = app.stores().iter().map(String::as_str).collect();
        let Some(only) = &self.store else { return Ok(all) };
        match all.iter().find(|s| **s == only.as_str()) {
            Some(found) => Ok(vec![*found]),
            None => {
                bail!("the application declares no store {only:?} (it has: {})", all.join(", "))
            }
        }
    }

    fn scratch_url(&self) -> anyhow::Result<String> {
        let given =
            self.scratch_url.clone().or_else(|| std::env::var("JADPO_SCRATCH_DATABASE_URL").ok());
        given.filter(|u| !u.trim().is_empty()).context(
            "the PostgreSQL schema is built on a scratch database: give --scratch-url \
             postgres://USER@HOST/DB (a server where this role may create a database) or set \
             JADPO_SCRATCH_DATABASE_URL, or leave PostgreSQL out with --dialect sqlite",
        )
    }

    /// The snapshots' folder: `--dir`, else the project's, found from here upwards as git
    /// finds its own, so that `jadpo check` in a subfolder reads the committed snapshots and
    /// `jadpo snapshot` never writes a second set where there was none.
    fn folder(&self) -> anyhow::Result<PathBuf> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let here = std::env::current_dir().context("reading the current folder")?;
        let found = here.ancestors().map(|a| a.join(DEFAULT_DIR)).find(|p| p.is_dir());
        found.with_context(|| {
            format!(
                "no {DEFAULT_DIR} folder in {} or any folder above it: run this in the \
                 project (its root holds {DEFAULT_DIR}), or give --dir",
                here.display()
            )
        })
    }

    /// The schema the migrations make for each selected store and dialect.
    async fn build(&self, app: &Application) -> anyhow::Result<Vec<Built>> {
        let stores = self.stores(app)?;
        let dialects = self.dialects();
        let server = match dialects.contains(&Dialect::Postgres) {
            true => Some(self.scratch_url()?),
            false => None,
        };
        let mut out = Vec::new();
        for dialect in dialects {
            for store in &stores {
                let scratch = match dialect {
                    Dialect::Sqlite => jadpo_runtime_sqlite::scratch(store)?,
                    Dialect::Postgres => {
                        Scratch::postgres(server.as_deref().unwrap_or_default(), store).await?
                    }
                };
                let built = build_one(app, store, scratch.store()).await;
                scratch
                    .remove()
                    .await
                    .with_context(|| format!("dropping the scratch database of store {store}"))?;
                let (catalog, snapshot) = built?;
                out.push(Built {
                    store: (*store).to_owned(),
                    dialect,
                    snapshot,
                    provenance: provenance(&catalog),
                    placed: app.placed_tables(store, dialect),
                });
            }
        }
        Ok(out)
    }
}

fn snapshot_path(dir: &Path, dialect: Dialect, store: &str) -> PathBuf {
    dir.join(Snapshot::relative_path(dialect.name(), store))
}

async fn build_one(
    app: &Application,
    store: &str,
    scratch: &dyn Store,
) -> anyhow::Result<(MigrationCatalog, Snapshot)> {
    let catalog = catalog_for(app, scratch)?;
    let snapshot = check::build_snapshot(scratch, &catalog, store).await.with_context(|| {
        format!("applying the migrations of store {store} ({})", scratch.dialect())
    })?;
    Ok((catalog, snapshot))
}

/// `jadpo snapshot`.
pub(crate) async fn snapshot(args: SchemaArgs) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let dir = args.folder()?;
    let built = args.build(&app).await?;
    let mut written = Vec::new();
    for b in &built {
        let path = snapshot_path(&dir, b.dialect, &b.store);
        let text = b.snapshot.to_text();
        let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == text);
        if !unchanged {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        }
        if !args.json {
            let state = if unchanged { "unchanged" } else { "written" };
            say!("{state:<9} {} ({} tables)", path.display(), b.snapshot.tables.len());
        }
        written.push(json!({
            "store": b.store,
            "dialect": b.dialect.name(),
            "path": path.display().to_string(),
            "tables": b.snapshot.tables.len(),
            "changed": !unchanged,
        }));
    }
    if args.json {
        say!("{}", json!({ "snapshots": written }));
    }
    Ok(())
}

/// `jadpo check`: exits non-zero when anything but a notice is found.
pub(crate) async fn check(args: SchemaArgs) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let dir = args.folder()?;
    let built = args.build(&app).await?;
    let mut findings = Vec::new();
    let mut checked = Vec::new();
    for b in &built {
        let path = snapshot_path(&dir, b.dialect, &b.store);
        let committed = read_snapshot(&path)?;
        let e = b.expected();
        findings.extend(check::check_placement(&e));
        findings.extend(check::check_snapshot(&e, committed.as_ref(), &path.display().to_string()));
        checked.push(json!({"store": b.store, "dialect": b.dialect.name(), "snapshot": path.display().to_string()}));
    }
    let live = live_stores(&app, &args).await?;
    for (name, store) in &live {
        let Some(b) = built.iter().find(|b| b.store == *name && b.dialect == store.dialect())
        else {
            bail!(
                "store {name} is a {} database; check it with that dialect (drop --dialect)",
                store.dialect()
            );
        };
        let path = snapshot_path(&dir, b.dialect, name);
        let committed = read_snapshot(&path)?.unwrap_or_else(|| b.snapshot.clone());
        let e = b.expected();
        findings.extend(check_database(&e, &committed, store.as_ref()).await?);
        let fields = app.file_fields_in(name);
        let missing = check::check_file_triggers(&e, store.as_ref(), &fields).await;
        findings.extend(missing.with_context(|| format!("reading store {name}'s triggers"))?);
        checked.push(json!({"store": name, "dialect": b.dialect.name(), "database": true}));
    }
    report(&findings, &checked, args.json)
}

/// The live database against its snapshot; one finding when it was never migrated.
async fn check_database(
    e: &Expected<'_>,
    snapshot: &Snapshot,
    store: &dyn Store,
) -> anyhow::Result<Vec<Finding>> {
    let applied = store
        .migrations_applied()
        .await
        .with_context(|| format!("reading store {}'s ledger", e.store))?;
    if applied.is_empty() {
        return Ok(vec![e.finding(
            "database.not_migrated".into(),
            Severity::Error,
            format!("store {} ({}): the database has no migration applied", e.store, e.dialect),
            "run `jadpo migrate apply` (the deploy step does)".into(),
        )]);
    }
    let live =
        check::describe(store).await.with_context(|| format!("describing store {}", e.store))?;
    Ok(check::check_live(e, snapshot, &live, &applied))
}

/// The stores whose URLs this process was given (none when no `DATABASE_URL…` is set).
async fn live_stores(
    app: &Arc<Application>,
    args: &SchemaArgs,
) -> anyhow::Result<Vec<(String, Arc<dyn Store>)>> {
    let given = std::env::vars().any(|(k, v)| k.starts_with("DATABASE_URL") && !v.is_empty());
    if !given {
        return Ok(Vec::new());
    }
    let wiring = crate::common::open_wiring(app, args.store.as_deref(), false)?;
    let only = args.store.as_deref();
    Ok(wiring
        .stores
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o == *name))
        .map(|(name, store)| (name.to_owned(), Arc::clone(store)))
        .collect())
}

fn read_snapshot(path: &Path) -> anyhow::Result<Option<Snapshot>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(Snapshot::parse(&text, &path.display().to_string())?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn report(
    findings: &[Finding],
    checked: &[serde_json::Value],
    as_json: bool,
) -> anyhow::Result<()> {
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    let notices = findings.len() - errors;
    if as_json {
        let list: Vec<_> = findings
            .iter()
            .map(|f| {
                json!({"code": f.code, "severity": f.severity.as_str(), "store": f.store,
                       "dialect": f.dialect, "message": f.message, "fix": f.fix})
            })
            .collect();
        say!("{}", json!({"ok": errors == 0, "checked": checked, "findings": list}));
    } else {
        for f in findings {
            say!("{:<6} {}  {}\n       fix: {}", f.severity.as_str(), f.code, f.message, f.fix);
        }
        let what: Vec<String> = checked
            .iter()
            .map(|c| {
                let kind = if c.get("database").is_some() { "database" } else { "migrations" };
                format!(
                    "{} {} ({})",
                    c["store"].as_str().unwrap_or("?"),
                    kind,
                    c["dialect"].as_str().unwrap_or("?")
                )
            })
            .collect();
        say!("jadpo check: {errors} error(s), {notices} notice(s) over {}", what.join(", "));
    }
    if errors > 0 {
        bail!("jadpo check found {errors} error(s)");
    }
    Ok(())
}
