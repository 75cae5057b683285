//! `jadpo migrate apply | status | sql | drop-unplaced`.

use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use jadpo_application::Application;
use jadpo_core::Dialect;
use jadpo_engine::migrate;
use jadpo_runtime::{Config, Stores, catalog_for};
use jadpo_schema::migrate::MigrationStatus;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum MigrateCommand {
    /// Apply every pending migration, each in its own transaction.
    Apply(Target),
    /// List every migration and whether it is applied, pending, or changed since it was applied.
    Status(Target),
    /// Print the PostgreSQL schema as one idempotent script, for pipelines that apply SQL
    /// themselves (`psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f schema.sql`): the migrations and
    /// the store's audit triggers, the database `apply` makes. Needs no database.
    Sql {
        /// The store whose application migrations to include (default: the default store).
        #[arg(long)]
        store: Option<String>,
    },
    /// Drop the runtime's tables a store holds though the declaration does not place them there
    /// (a database made before placement, or a feature moved away); each must be empty. Lists
    /// them and changes nothing without --yes.
    DropUnplaced {
        /// The store.
        #[arg(long)]
        store: String,
        /// Drop them (without it, only list them).
        #[arg(long)]
        yes: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite workflow events stored before the complete form (the inner payload alone) into
    /// the complete serialized event, a batch per transaction; online, resumable, repeatable.
    Events {
        /// Only this store.
        #[arg(long)]
        store: Option<String>,
        /// Events per transaction.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        batch: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct Target {
    /// Act on this store only (default: every store with a URL).
    #[arg(long)]
    store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(command: MigrateCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    match command {
        MigrateCommand::Apply(target) => apply(&app, &target).await,
        MigrateCommand::Status(target) => status(&app, &target).await,
        MigrateCommand::Sql { store } => sql(&app, store.as_deref()),
        MigrateCommand::DropUnplaced { store, yes, json } => {
            drop_unplaced(&app, &store, yes, json).await
        }
        MigrateCommand::Events { store, batch, json } => {
            events(&app, store.as_deref(), batch, json).await
        }
    }
}

async fn events(
    app: &Arc<Application>,
    only: Option<&str>,
    batch: u32,
    json: bool,
) -> anyhow::Result<()> {
    let wiring = crate::common::wiring(app, only).await?;
    let mut out = Vec::new();
    for (name, store) in wiring.stores.iter() {
        if only.is_some_and(|o| o != name) || !app.workflow_stores().contains(&name) {
            continue;
        }
        let done = jadpo_engine::workflow::events::upgrade_payloads(store.as_ref(), batch, |_| {})
            .await
            .with_context(|| format!("store {name}: stopped; run it again to resume"))?;
        if !json {
            say!(
                "store {name}: {} events rewritten into the complete form ({} pages)",
                done.rewritten,
                done.pages
            );
        }
        out.push(
            serde_json::json!({"store": name, "rewritten": done.rewritten, "pages": done.pages}),
        );
    }
    if json {
        say!("{}", serde_json::json!({"stores": out}));
    }
    Ok(())
}

async fn drop_unplaced(
    app: &Arc<Application>,
    store_name: &str,
    yes: bool,
    as_json: bool,
) -> anyhow::Result<()> {
    let wiring = crate::common::wiring(app, Some(store_name)).await?;
    let store = wiring.stores.get(store_name).context("the store was not opened")?;
    let catalog = catalog_for(app, store.as_ref())?;
    let found = migrate::unplaced(store.as_ref(), &catalog).await?;
    if yes && !found.tables.is_empty() {
        migrate::drop_unplaced(store.as_ref(), &found).await?;
    }
    let features: Vec<&str> = found.features.iter().map(|f| f.as_str()).collect();
    if as_json {
        let out = json!({"store": store_name, "tables": found.tables, "functions": found.functions,
                         "features": features, "dropped": yes && !found.tables.is_empty()});
        say!("{out}");
        return Ok(());
    }
    if found.tables.is_empty() {
        say!("store {store_name}: every jadpo_ table here is placed here; nothing to drop");
        return Ok(());
    }
    let verb = if yes { "dropped" } else { "would drop" };
    say!(
        "store {store_name}: {verb} the tables of {} ({})",
        features.join(", "),
        found.tables.join(", ")
    );
    if !found.functions.is_empty() {
        say!("  and the functions {}", found.functions.join(", "));
    }
    if !yes {
        say!("nothing was changed: run again with --yes to drop them");
    }
    Ok(())
}

fn stores(
    app: &Arc<Application>,
    target: &Target,
    create: bool,
) -> anyhow::Result<(Config, Stores)> {
    let wiring = crate::common::open_wiring(app, target.store.as_deref(), create)?;
    Ok((wiring.config, wiring.stores))
}

fn selected<'a>(
    target: &Target,
    config: &'a Config,
) -> impl Iterator<Item = &'a jadpo_runtime::StoreConfig> {
    let only = target.store.clone();
    config.stores.iter().filter(move |s| only.as_ref().is_none_or(|o| *o == s.name))
}

async fn apply(app: &Arc<Application>, target: &Target) -> anyhow::Result<()> {
    let (config, stores) = stores(app, target, true)?;
    let mut out = Vec::new();
    for store_config in selected(target, &config) {
        let Some(store) = stores.get(&store_config.name) else {
            continue;
        };
        let catalog = catalog_for(app, store.as_ref())?;
        let report = migrate::apply(store.as_ref(), &catalog).await.with_context(|| {
            format!("store {} ({})", store_config.name, store_config.url.display())
        })?;
        jadpo_engine::migrate::install_triggers(store.as_ref(), app, &store_config.name)
            .await
            .with_context(|| format!("installing the triggers of store {}", store_config.name))?;
        if !target.json {
            say!("store {} ({})", store_config.name, store_config.url.display());
            for (ledger, version, name) in &report.adopted {
                say!("  adopted  {ledger} {version} {name}");
            }
            for (ledger, version, name) in &report.applied {
                say!("  applied  {ledger} {version} {name}");
            }
            if report.applied.is_empty() && report.adopted.is_empty() {
                say!("  up to date: nothing to apply");
            }
        }
        let entries = |list: &[(jadpo_schema::migrate::Ledger, u32, String)]| {
            list.iter()
                .map(|(l, v, n)| json!({"ledger": l.name(), "version": v, "name": n}))
                .collect::<Vec<_>>()
        };
        out.push(json!({
            "store": store_config.name,
            "database": store_config.url.display(),
            "applied": entries(&report.applied),
            "adopted": entries(&report.adopted),
        }));
    }
    if target.json {
        say!("{}", json!({ "stores": out }));
    }
    Ok(())
}

async fn status(app: &Arc<Application>, target: &Target) -> anyhow::Result<()> {
    let (config, stores) = stores(app, target, false)?;
    let mut out = Vec::new();
    for store_config in selected(target, &config) {
        let Some(store) = stores.get(&store_config.name) else {
            continue;
        };
        let catalog = catalog_for(app, store.as_ref())?;
        let list = migrate::status(store.as_ref(), &catalog).await.with_context(|| {
            format!("store {} ({})", store_config.name, store_config.url.display())
        })?;
        if !target.json {
            say!("store {} ({})", store_config.name, store_config.url.display());
            say!("  {:<10} {} {} NAME (APPLIED AT)", "STATE", "LEDGER", "VERSION");
            for s in &list {
                say!("  {}", line(s));
            }
        }
        out.push(json!({
            "store": store_config.name,
            "database": store_config.url.display(),
            "migrations": list.iter().map(|s| json!({
                "ledger": s.ledger.name(),
                "version": s.version,
                "name": s.name,
                "state": s.state.label(),
                "applied_at": s.state.applied_at().map(|t| t.to_rfc3339()),
            })).collect::<Vec<_>>(),
        }));
    }
    if target.json {
        say!("{}", json!({ "stores": out }));
    }
    Ok(())
}

fn line(s: &MigrationStatus) -> String {
    let at = s
        .state
        .applied_at()
        .map(|t| t.format(" (%Y-%m-%d %H:%M:%S UTC)").to_string())
        .unwrap_or_default();
    let name = if s.name.is_empty() { "(unknown to this build)" } else { s.name.as_str() };
    format!("{:<10} {} {:>3} {name}{at}", s.state.label(), s.ledger, s.version)
}

fn sql(app: &Application, store: Option<&str>) -> anyhow::Result<()> {
    let store = store.unwrap_or(app.default_store());
    if !app.stores().iter().any(|s| s == store) {
        bail!("the application declares no store {store:?} (it has: {})", app.stores().join(", "));
    }
    let catalog = jadpo_store_postgres::builtin_catalog()
        .with_app_migrations(app.migrations_for(store, Dialect::Postgres))?
        .with_placement(app.store_features(store))?;
    let script = jadpo_store_postgres::schema_sql(
        &catalog,
        &app.audited_in(store),
        &app.file_fields_in(store),
    )?;
    crate::out::text(&script);
    Ok(())
}
