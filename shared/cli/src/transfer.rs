//! `jadpo export` / `jadpo import`: the specification's logical export and import of the
//! workflow store, between adapters (the physical encodings differ, so rows are never copied).
//!
//! The format is JSON lines: a header, one line per run (state, events, commands) and per
//! Session, and a trailer with the counts, which import checks. Both directions stream, one run
//! at a time, with a progress spinner on standard error. Import reads the file twice: first the
//! whole of it is checked (header, every record, the trailer's counts, and for a PostgreSQL
//! target every value against its column's width), and only then is anything written, so a cut,
//! garbled or oversized file changes nothing. Each run and Session then commits on its own, and
//! `--resume` skips those an interrupted import already wrote. Stop writes before exporting: an
//! export compares the store's fingerprint before and after, and one that raced a writer gets no
//! end marker, so no import takes it.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use jadpo_core::Store;
use jadpo_core::model::workflow::rows::{RunExport, SessionExport};
use serde_json::{Value, json};

const FORMAT: &str = "jadpo.workflow-export";

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

pub(crate) async fn export(args: ExportArgs) -> anyhow::Result<()> {
    // Ctrl-C or SIGTERM stops the export between runs; the file then has no end marker, which
    // `jadpo import` refuses.
    let mut stop =
        jadpo_runtime::shutdown::StopSignal::listen().context("listening for signals")?;
    let (name, store) = target(args.store.as_deref()).await?;
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(new_private_file(path)?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    let bar = spinner("exported");
    let before = store.workflow_fingerprint().await?;
    writeln!(
        out,
        "{}",
        json!({"format": FORMAT, "version": 1, "store": name, "dialect": store.dialect().name()})
    )?;
    let (mut runs, mut after) = (0_u64, String::new());
    loop {
        let page = store.executions_page(&after, 500).await?;
        let Some(last) = page.last().cloned() else { break };
        for run in &page {
            if let Some(signal) = stop.requested().await {
                bail!(
                    "stopped by {signal} after {runs} runs: the export has no end marker, and \
                     `jadpo import` refuses it; export again"
                );
            }
            if let Some(export) = store.run_export(run).await? {
                writeln!(out, "{}", json!({"run": export}))?;
                runs += 1;
                bar.inc(1);
            }
        }
        after = last;
    }
    let mut sessions = 0_u64;
    for id in store.sessions_all().await? {
        if let Some(s) = store.session_export(&id).await? {
            writeln!(out, "{}", json!({"session": s}))?;
            sessions += 1;
            bar.inc(1);
        }
    }
    let after = store.workflow_fingerprint().await?;
    if after != before {
        out.flush()?;
        bail!(
            "store {name} changed while it was exported (before: {before}; after: {after}): a \
             writer is live. The export has no end marker, and `jadpo import` refuses it; stop \
             every writer and export again"
        );
    }
    writeln!(out, "{}", json!({"end": {"runs": runs, "sessions": sessions}}))?;
    out.flush()?;
    bar.finish_and_clear();
    eprintln!("exported {runs} runs and {sessions} sessions from store {name}");
    Ok(())
}

/// One line of an export.
enum Record {
    Header,
    Run(Box<RunExport>),
    Session(Box<SessionExport>),
    End { runs: u64, sessions: u64 },
}

/// Line `number` of an export, parsed and checked on its own.
fn record(number: usize, line: &str) -> anyhow::Result<Record> {
    let record: Value =
        serde_json::from_str(line).with_context(|| format!("line {number} is not JSON"))?;
    if number == 1 {
        if record["format"] != FORMAT || record["version"] != 1 {
            bail!("line 1: not a {FORMAT} version 1 file");
        }
        return Ok(Record::Header);
    }
    if let Some(run) = record.get("run") {
        let run = serde_json::from_value(run.clone())
            .with_context(|| format!("line {number}: not a run"))?;
        Ok(Record::Run(Box::new(run)))
    } else if let Some(s) = record.get("session") {
        let s = serde_json::from_value(s.clone())
            .with_context(|| format!("line {number}: not a session"))?;
        Ok(Record::Session(Box::new(s)))
    } else if let Some(end) = record.get("end") {
        let count = |k: &str| end[k].as_u64().with_context(|| format!("line {number}: {k}"));
        Ok(Record::End { runs: count("runs")?, sessions: count("sessions")? })
    } else {
        bail!("line {number}: unknown record")
    }
}

/// How many values over the target's limits an import names before it gives up listing them.
const SHOWN_OVER: usize = 10;

/// Reads the whole export before anything is written: the header, every record, and the end
/// marker with the counts it states; for a PostgreSQL target (`postgres`), every value against
/// its column's width; on any target, every Session's context against the size a patch
/// enforces. The runs and Sessions it holds.
fn check(path: &std::path::Path, postgres: bool) -> anyhow::Result<(u64, u64)> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let (mut runs, mut sessions, mut ended) = (0_u64, 0_u64, false);
    let mut over = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        let parsed = record(number, &line?)?;
        if ended {
            bail!("line {number}: data after the end marker");
        }
        let mut found = match (&parsed, postgres) {
            (Record::Run(run), true) => run.over_postgres_limits(),
            (Record::Session(s), true) => s.over_postgres_limits(),
            _ => Vec::new(),
        };
        if let Record::Session(s) = &parsed {
            let context = jadpo_engine::workflow::session::check_context(&s.context);
            found.extend(context.err().map(|e| format!("session {}: {e}", s.id)));
        }
        over.extend(found.into_iter().map(|f| format!("line {number}: {f}")));
        match parsed {
            Record::Header => {}
            Record::Run(_) => runs += 1,
            Record::Session(_) => sessions += 1,
            Record::End { runs: r, sessions: s } if (r, s) == (runs, sessions) => ended = true,
            Record::End { runs: r, sessions: s } => bail!(
                "the file holds {runs} runs and {sessions} sessions but its end says {r} and {s}: \
                 it is incomplete"
            ),
        }
    }
    if !ended {
        bail!("the file has no end marker: it was cut short ({runs} runs and {sessions} sessions)");
    }
    if !over.is_empty() {
        let shown = over.iter().take(SHOWN_OVER).cloned().collect::<Vec<_>>().join("\n  ");
        let more = over.len().saturating_sub(SHOWN_OVER);
        let more = if more > 0 { format!("\n  … and {more} more") } else { String::new() };
        bail!("{} values do not fit the store's columns or limits:\n  {shown}{more}", over.len());
    }
    Ok((runs, sessions))
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

pub(crate) async fn import(args: ImportArgs) -> anyhow::Result<()> {
    // Ctrl-C or SIGTERM stops the import between records, saying how far it got.
    let mut stop =
        jadpo_runtime::shutdown::StopSignal::listen().context("listening for signals")?;
    let (name, store) = target(args.store.as_deref()).await?;
    if store.migrations_applied().await?.is_empty() {
        bail!("store {name} is not migrated: run `jadpo migrate apply` first");
    }
    let (path, _spooled) = input_file(&args).await?;
    let postgres = store.dialect() == jadpo_core::sql::Dialect::Postgres;
    let (total_runs, total_sessions) = check(&path, postgres).context("nothing was imported")?;
    let bar = spinner("imported");
    let (mut runs, mut sessions, mut skipped) = (0_u64, 0_u64, 0_u64);
    let file =
        std::fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        if let Some(signal) = stop.requested().await {
            bail!(
                "stopped by {signal}: {runs} of {total_runs} runs and {sessions} of \
                 {total_sessions} sessions were imported (each commits on its own); import the \
                 lines after them into this store, or the whole file into an empty one"
            );
        }
        let imported = match record(number, &line?)? {
            Record::Run(run) => import_run(store.as_ref(), &run, args.resume)
                .await
                .map(|new| if new { runs += 1 } else { skipped += 1 })
                .with_context(|| format!("line {number}: importing run {}", run.state.run_id)),
            Record::Session(s) => import_session(store.as_ref(), &s, args.resume)
                .await
                .map(|new| if new { sessions += 1 } else { skipped += 1 })
                .with_context(|| format!("line {number}: importing session {}", s.id)),
            Record::Header | Record::End { .. } => Ok(()),
        };
        imported.with_context(|| {
            format!(
                "{runs} of {total_runs} runs and {sessions} of {total_sessions} sessions were \
                 imported before it (each run and Session commits on its own): run the same \
                 import again with --resume to continue"
            )
        })?;
        bar.inc(1);
    }
    bar.finish_and_clear();
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

/// Imports `run`; with `resume`, a run the store holds already as the file has it (same
/// workflow, version, revision and events) is skipped (`false`). One that differs is a conflict.
async fn import_run(store: &dyn Store, run: &RunExport, resume: bool) -> anyhow::Result<bool> {
    let id = &run.state.run_id;
    if resume {
        if let Some(there) = store.run_export(id).await? {
            let same = |r: &RunExport| {
                let s = &r.state;
                (s.workflow_id.clone(), s.workflow_version.clone(), s.revision, r.events.len())
            };
            if same(&there) != same(run) {
                bail!("run {id} is in the store already and differs from the file's");
            }
            return Ok(false);
        }
    }
    store.run_import(run).await?;
    Ok(true)
}

/// Imports Session `s`; with `resume`, one the store holds already at the same revisions is
/// skipped (`false`). One that differs is a conflict.
async fn import_session(
    store: &dyn Store,
    s: &SessionExport,
    resume: bool,
) -> anyhow::Result<bool> {
    if resume {
        if let Some(there) = store.session_export(&s.id).await? {
            let same = |x: &SessionExport| (x.user_id.clone(), x.revision, x.context_revision);
            if same(&there) != same(s) {
                bail!("session {} is in the store already and differs from the file's", s.id);
            }
            return Ok(false);
        }
    }
    store.session_import(s).await?;
    Ok(true)
}
