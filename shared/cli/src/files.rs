//! `jadpo backup` and `jadpo restore`: an SQLite store's database as files, backed up and
//! restored so that neither can lose data (the adapter's `files` module says how), the restore
//! followed by the eight verification checks. A PostgreSQL store is backed up and restored with
//! PostgreSQL's own tools into a separate database; these verbs say so rather than guess.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;
use jadpo_runtime::{Config, DatabaseUrl, Mode, SqlitePath};
use jadpo_runtime_sqlite::files as sqlite_files;
use serde_json::json;

#[derive(Debug, Args)]
pub(crate) struct BackupArgs {
    /// The store (default: the application's default store).
    #[arg(long)]
    store: Option<String>,
    /// The backup file to write (a new file; an existing one is refused).
    #[arg(long)]
    output: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RestoreArgs {
    /// The store (default: the application's default store).
    #[arg(long)]
    store: Option<String>,
    /// The backup file to restore (made by `jadpo backup` or `sqlite3 … .backup`).
    #[arg(long)]
    from: PathBuf,
    /// A new directory for the failed database's files (default: `<file>.failed-<UTC time>`
    /// beside it).
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

const POSTGRES: &str = "is a PostgreSQL store: back it up with `pg_dump --format=custom` and \
    restore it into a separate database with `pg_restore`, then run `jadpo verify` on that \
    database (docs/operations.md, \"Backup and restore\")";

/// The store's name and its SQLite file; a PostgreSQL or in-memory store is refused.
fn sqlite_file(only: Option<&str>) -> anyhow::Result<(String, PathBuf)> {
    let app = crate::common::application()?;
    let config = Config::from_process_env(&app, Mode::Operator)?;
    let found = match only {
        Some(name) => config.stores.iter().find(|s| s.name == name),
        None => config.stores.first(),
    };
    let Some(store) = found else {
        bail!("store {:?} has no URL here", only.unwrap_or("(default)"));
    };
    match &store.url {
        DatabaseUrl::Sqlite(SqlitePath::File(path)) => Ok((store.name.clone(), path.clone())),
        DatabaseUrl::Sqlite(SqlitePath::Memory) => {
            bail!("store {} is in memory: there is no file to back up or restore", store.name)
        }
        DatabaseUrl::Postgres(_) => bail!("store {} {POSTGRES}", store.name),
    }
}

pub(crate) fn backup(args: &BackupArgs) -> anyhow::Result<()> {
    let (name, db) = sqlite_file(args.store.as_deref())?;
    let bytes = sqlite_files::backup(&db, &args.output)?;
    let text = format!(
        "store {name}: backed up {} to {} ({bytes} bytes)",
        db.display(),
        args.output.display()
    );
    let doc = json!({"store": name, "database": db, "backup": args.output, "bytes": bytes});
    crate::common::answer(args.json, &text, &doc);
    Ok(())
}

fn default_keep(db: &Path) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let mut name = db.as_os_str().to_owned();
    name.push(format!(".failed-{stamp}"));
    PathBuf::from(name)
}

pub(crate) async fn restore(args: RestoreArgs) -> anyhow::Result<()> {
    let (name, db) = sqlite_file(args.store.as_deref())?;
    let keep = args.keep.clone().unwrap_or_else(|| default_keep(&db));
    let restored = sqlite_files::restore(&db, &args.from, &keep)?;
    let found = match &restored.failed {
        sqlite_files::Failed::Whole => "whole".to_owned(),
        sqlite_files::Failed::Missing => "missing".to_owned(),
        sqlite_files::Failed::Unreadable(why) => format!("unreadable: {why}"),
    };
    if !args.json {
        say!("store {name}: restored {} from {}", db.display(), args.from.display());
        match &restored.failed {
            sqlite_files::Failed::Whole => {}
            sqlite_files::Failed::Missing => {
                say!("  the failed database's main file was gone: what remained of it is kept")
            }
            sqlite_files::Failed::Unreadable(why) => {
                say!("  the failed database was unreadable ({why}): its files are kept as found")
            }
        }
        for kept in &restored.kept {
            say!("  kept   {}", kept.display());
        }
        for removed in &restored.removed {
            say!("  removed stale {}", removed.display());
        }
    }
    let (failed, checks) = crate::verify::checked(Some(&name), args.json).await?;
    if args.json {
        let doc = json!({
            "store": name, "database": db, "from": args.from,
            "failed_database": found, "kept": restored.kept, "removed": restored.removed,
            "verify": checks, "failed": failed,
        });
        say!("{doc}");
    }
    if failed > 0 {
        bail!("restored, but {failed} verification check(s) failed: keep traffic off it");
    }
    Ok(())
}
