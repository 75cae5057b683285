//! `jadpo export` / `jadpo import`: the specification's logical export and import of the
//! workflow store, between adapters (the physical encodings differ, so rows are never copied).
//!
//! The format is JSON lines: a header, one line per run (state, events, commands) and per
//! Session, and a trailer with the counts, which import checks. Both directions stream, one run
//! at a time, with a progress spinner on standard error. Stop writes before exporting.

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

pub(crate) async fn export(args: ExportArgs) -> anyhow::Result<()> {
    let (name, store) = target(args.store.as_deref()).await?;
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::new(sink);
    let bar = spinner("exported");
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
    writeln!(out, "{}", json!({"end": {"runs": runs, "sessions": sessions}}))?;
    out.flush()?;
    bar.finish_and_clear();
    eprintln!("exported {runs} runs and {sessions} sessions from store {name}");
    Ok(())
}

pub(crate) async fn import(args: ImportArgs) -> anyhow::Result<()> {
    let (name, store) = target(args.store.as_deref()).await?;
    if store.migrations_applied().await?.is_empty() {
        bail!("store {name} is not migrated: run `jadpo migrate apply` first");
    }
    let source: Box<dyn std::io::Read> = match &args.input {
        Some(path) => Box::new(
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
        ),
        None => Box::new(std::io::stdin().lock()),
    };
    let bar = spinner("imported");
    let (mut runs, mut sessions, mut ended) = (0_u64, 0_u64, false);
    for (index, line) in BufReader::new(source).lines().enumerate() {
        let number = index + 1;
        let line = line?;
        let record: Value =
            serde_json::from_str(&line).with_context(|| format!("line {number} is not JSON"))?;
        if number == 1 {
            if record["format"] != FORMAT || record["version"] != 1 {
                bail!("line 1: not a {FORMAT} version 1 file");
            }
            continue;
        }
        if ended {
            bail!("line {number}: data after the end marker");
        }
        if let Some(run) = record.get("run") {
            let run: RunExport = serde_json::from_value(run.clone())
                .with_context(|| format!("line {number}: not a run"))?;
            store
                .run_import(&run)
                .await
                .with_context(|| format!("line {number}: importing run {}", run.state.run_id))?;
            runs += 1;
        } else if let Some(s) = record.get("session") {
            let s: SessionExport = serde_json::from_value(s.clone())
                .with_context(|| format!("line {number}: not a session"))?;
            store
                .session_import(&s)
                .await
                .with_context(|| format!("line {number}: importing session {}", s.id))?;
            sessions += 1;
        } else if let Some(end) = record.get("end") {
            if end["runs"] != runs || end["sessions"] != sessions {
                bail!(
                    "the file ends after {runs} runs and {sessions} sessions but says {end}: it is incomplete"
                );
            }
            ended = true;
        } else {
            bail!("line {number}: unknown record");
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if !ended {
        bail!(
            "the file has no end marker: it was cut short ({runs} runs and {sessions} sessions were imported)"
        );
    }
    eprintln!("imported {runs} runs and {sessions} sessions into store {name}");
    Ok(())
}
