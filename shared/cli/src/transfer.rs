//! `jadpo export` / `jadpo import`: the arguments, the files and a progress spinner on standard
//! error around the engine's export and import of the workflow store
//! (`jadpo_engine::workflow::transfer`, which says what the format is and how an import checks a
//! whole file before it writes anything). Stop writes before exporting: an export that raced a
//! writer gets no end marker, so no import takes it.

use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use async_trait::async_trait;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use jadpo_core::Store;
use jadpo_engine::workflow::transfer::{self, Counts, Progress};
use jadpo_runtime::shutdown::StopSignal;
use serde_json::json;

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The store to export (default: the default store).
    #[arg(long)]
    store: Option<String>,
    /// Write here instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The store to import into (default: the default store); it must be migrated and hold none
    /// of the imported runs or Sessions.
    #[arg(long)]
    store: Option<String>,
    /// Read from here instead of standard input.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Print what was imported as JSON on standard output.
    #[arg(long)]
    json: bool,
    /// Continue an import that stopped: a run or Session the store holds already, as the file
    /// has it, is skipped (one that differs still stops the import).
    #[arg(long)]
    resume: bool,
}

fn spinner(verb: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) =
        ProgressStyle::with_template(&format!("{{spinner}} {verb} {{pos}} records ({{per_sec}})"))
    {
        bar.set_style(style);
    }
    bar
}

async fn target(store: Option<&str>) -> anyhow::Result<(String, std::sync::Arc<dyn Store>)> {
    let app = crate::common::application()?;
    let name = store.unwrap_or(app.default_store()).to_owned();
    let wiring = crate::common::wiring(&app, Some(&name)).await?;
    let stores = &wiring.stores;
    let store = stores.get(&name).cloned().context("the store is not configured")?;
    Ok((name, store))
}

/// A new file readable by its owner only: an export holds every run's state and owners, so it
/// never overwrites a file (another export, or anything else) and is not left world-readable.
fn new_private_file(path: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
    opened.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => anyhow::anyhow!(
            "{} exists: `jadpo export` writes a new file only; choose another path or remove it",
            path.display()
        ),
        _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
    })
}

/// The export to read as a file: `--input`, or standard input spooled to a temporary file (the
/// file is read twice: checked whole, then imported).
async fn input_file(args: &ImportArgs) -> anyhow::Result<(PathBuf, Option<tempfile::TempPath>)> {
    if let Some(path) = &args.input {
        return Ok((path.clone(), None));
    }
    // On a thread of its own, so the runtime keeps hearing stop signals while stdin is read.
    let spooled = tokio::task::spawn_blocking(|| -> anyhow::Result<tempfile::TempPath> {
        let mut spool = tempfile::NamedTempFile::new().context("cannot spool standard input")?;
        std::io::copy(&mut std::io::stdin().lock(), &mut spool)?;
        Ok(spool.into_temp_path())
    });
    let path = spooled.await??;
    Ok((path.to_path_buf(), Some(path)))
}

/// The spinner, and Ctrl-C or SIGTERM heard between records.
struct Spinner {
    bar: ProgressBar,
    stop: StopSignal,
}

#[async_trait]
impl Progress for Spinner {
    fn record(&mut self) {
        self.bar.inc(1);
    }

    async fn stop_requested(&mut self) -> Option<String> {
        self.stop.requested().await.map(str::to_owned)
    }
}

fn watching(verb: &str) -> anyhow::Result<Spinner> {
    let stop = StopSignal::listen().context("listening for signals")?;
    Ok(Spinner { bar: spinner(verb), stop })
}

pub(crate) async fn export(args: ExportArgs) -> anyhow::Result<()> {
    // A stop between runs leaves the file without an end marker, which `jadpo import` refuses.
    let mut progress = watching("exported")?;
    let (name, store) = target(args.store.as_deref()).await?;
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(new_private_file(path)?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    let Counts { runs, sessions, .. } =
        transfer::export(store.as_ref(), &name, &mut out, &mut progress).await?;
    progress.bar.finish_and_clear();
    eprintln!("exported {runs} runs and {sessions} sessions from store {name}");
    Ok(())
}

pub(crate) async fn import(args: ImportArgs) -> anyhow::Result<()> {
    // A stop between records says how far the import got.
    let mut progress = watching("imported")?;
    let (name, store) = target(args.store.as_deref()).await?;
    transfer::ready_for_import(store.as_ref(), &name).await?;
    let (path, _spooled) = input_file(&args).await?;
    let open =
        || std::fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()));
    let total =
        transfer::check(store.as_ref(), BufReader::new(open()?)).context("nothing was imported")?;
    let lines = BufReader::new(open()?);
    let Counts { runs, sessions, skipped } =
        transfer::import(store.as_ref(), lines, total, args.resume, &mut progress).await?;
    progress.bar.finish_and_clear();
    let already =
        if skipped > 0 { format!(" ({skipped} already there, skipped)") } else { String::new() };
    eprintln!("imported {runs} runs and {sessions} sessions into store {name}{already}");
    if args.json {
        let imported =
            json!({"store": name, "runs": runs, "sessions": sessions, "skipped": skipped});
        say!("{imported}");
    }
    Ok(())
}
