//! The specification's logical export and import of the workflow store, between adapters (the
//! physical encodings differ, so rows are never copied); `jadpo export` and `jadpo import` parse
//! their arguments, open the files and print what this returns.
//!
//! The format is JSON lines: a header, one line per run (state, events, commands) and per
//! Session, and an end marker with the counts, which import checks. Both directions stream, one
//! run at a time. An import reads the file twice: first the whole of it is checked ([`check`]:
//! header, every record, the end marker's counts, and for a PostgreSQL target every value
//! against its column's width), and only then is anything written ([`import`]), so a cut, garbled
//! or oversized file changes nothing. Each run and Session then commits on its own, and `resume`
//! skips those an interrupted import already wrote. An export compares the store's fingerprint
//! before and after, and one that raced a writer gets no end marker, so no import takes it.

use std::io::{BufRead, Write};

use async_trait::async_trait;
use jadpo_core::ports::MigrationStore;
use jadpo_core::ports::WorkflowOps;
use jadpo_core::{Store, StoreError};
use jadpo_workflow::rows::{RunExport, SessionExport};
use serde_json::{Value, json};

const FORMAT: &str = "jadpo.workflow-export";

/// How many values over the target's limits a check names before it stops listing them.
const SHOWN_OVER: usize = 10;

/// Why an export or import stopped. An import's records before the failure are committed (each
/// on its own); a check's failure imported nothing.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error(
        "stopped by {signal} after {runs} runs: the export has no end marker, and `jadpo import` \
         refuses it; export again"
    )]
    ExportStopped { signal: String, runs: u64 },
    #[error(
        "store {store} changed while it was exported (before: {before}; after: {after}): a writer \
         is live. The export has no end marker, and `jadpo import` refuses it; stop every writer \
         and export again"
    )]
    ChangedMeanwhile { store: String, before: String, after: String },
    /// A line that is not a record of this format (its number, what is wrong).
    #[error("line {0}: {1}")]
    Line(usize, String),
    #[error("line {0} is not JSON: {1}")]
    NotJson(usize, serde_json::Error),
    #[error(
        "the file holds {runs} runs and {sessions} sessions but its end says {said_runs} and \
         {said_sessions}: it is incomplete"
    )]
    CountsDiffer { runs: u64, sessions: u64, said_runs: u64, said_sessions: u64 },
    #[error("the file has no end marker: it was cut short ({runs} runs and {sessions} sessions)")]
    NoEnd { runs: u64, sessions: u64 },
    /// Values that do not fit the target (how many; the first few, one per line).
    #[error("{0} values do not fit the store's columns or limits:\n  {1}")]
    TooLarge(usize, String),
    #[error("store {0} is not migrated: run `jadpo migrate apply` first")]
    NotMigrated(String),
    #[error(
        "stopped by {signal}: {runs} of {total_runs} runs and {sessions} of {total_sessions} \
         sessions were imported (each commits on its own); import the lines after them into \
         this store, or the whole file into an empty one"
    )]
    ImportStopped { signal: String, runs: u64, total_runs: u64, sessions: u64, total_sessions: u64 },
    /// A record the store refused (which, why), after `runs` and `sessions` were imported.
    #[error(
        "line {line}: importing {what}: {why}; {runs} of {total_runs} runs and {sessions} of \
         {total_sessions} sessions were imported before it (each run and Session commits on its \
         own): run the same import again with --resume to continue"
    )]
    Refused {
        line: usize,
        what: String,
        why: String,
        runs: u64,
        total_runs: u64,
        sessions: u64,
        total_sessions: u64,
    },
    /// Reading or writing the file (kept as the error's source, so a caller can tell a reader
    /// that closed the pipe).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a transfer reports as it goes, and asks before each record.
#[async_trait]
pub trait Progress: Send {
    /// One more record written.
    fn record(&mut self);
    /// The name of a stop request received (`SIGINT`), if any: the transfer stops there.
    async fn stop_requested(&mut self) -> Option<String>;
}

/// What was exported or imported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub runs: u64,
    pub sessions: u64,
    /// Records an import found there already, as the file has them (with `resume`).
    pub skipped: u64,
}

/// Writes every run and Session of `store` (named `name`) to `out`.
pub async fn export(
    store: &dyn Store,
    name: &str,
    out: &mut dyn Write,
    progress: &mut dyn Progress,
) -> Result<Counts, TransferError> {
    let before = store.workflow_fingerprint().await?;
    let header =
        json!({"format": FORMAT, "version": 1, "store": name, "dialect": store.dialect().name()});
    writeln!(out, "{header}")?;
    let (mut runs, mut after) = (0_u64, String::new());
    loop {
        let page = store.executions_page(&after, 500).await?;
        let Some(last) = page.last().cloned() else { break };
        for run in &page {
            if let Some(signal) = progress.stop_requested().await {
                return Err(TransferError::ExportStopped { signal, runs });
            }
            if let Some(export) = store.run_export(run).await? {
                writeln!(out, "{}", json!({"run": export}))?;
                runs += 1;
                progress.record();
            }
        }
        after = last;
    }
    let mut sessions = 0_u64;
    for id in store.sessions_all().await? {
        if let Some(s) = store.session_export(&id).await? {
            writeln!(out, "{}", json!({"session": s}))?;
            sessions += 1;
            progress.record();
        }
    }
    let after = store.workflow_fingerprint().await?;
    if after != before {
        out.flush()?;
        return Err(TransferError::ChangedMeanwhile { store: name.to_owned(), before, after });
    }
    writeln!(out, "{}", json!({"end": {"runs": runs, "sessions": sessions}}))?;
    out.flush()?;
    Ok(Counts { runs, sessions, skipped: 0 })
}

/// One line of an export.
enum Record {
    Header,
    Run(Box<RunExport>),
    Session(Box<SessionExport>),
    End { runs: u64, sessions: u64 },
}

/// Line `number` of an export, parsed and checked on its own.
fn record(number: usize, line: &str) -> Result<Record, TransferError> {
    let record: Value =
        serde_json::from_str(line).map_err(|e| TransferError::NotJson(number, e))?;
    let bad = |what: &str| TransferError::Line(number, what.to_owned());
    if number == 1 {
        if record["format"] != FORMAT || record["version"] != 1 {
            return Err(bad(&format!("not a {FORMAT} version 1 file")));
        }
        return Ok(Record::Header);
    }
    if let Some(run) = record.get("run") {
        let run =
            serde_json::from_value(run.clone()).map_err(|e| bad(&format!("not a run: {e}")))?;
        Ok(Record::Run(Box::new(run)))
    } else if let Some(s) = record.get("session") {
        let s =
            serde_json::from_value(s.clone()).map_err(|e| bad(&format!("not a session: {e}")))?;
        Ok(Record::Session(Box::new(s)))
    } else if let Some(end) = record.get("end") {
        let count = |k: &str| end[k].as_u64().ok_or_else(|| bad(k));
        Ok(Record::End { runs: count("runs")?, sessions: count("sessions")? })
    } else {
        Err(bad("unknown record"))
    }
}

/// Reads a whole export before anything is written: the header, every record, and the end
/// marker with the counts it states; for `store` on PostgreSQL, every value against its
/// column's width; on any store, every Session's context against the size a patch enforces.
/// The runs and Sessions it holds.
pub fn check(store: &dyn Store, lines: impl BufRead) -> Result<Counts, TransferError> {
    let postgres = store.dialect() == jadpo_core::sql::Dialect::Postgres;
    let (mut runs, mut sessions, mut ended) = (0_u64, 0_u64, false);
    let mut over = Vec::new();
    for (index, line) in lines.lines().enumerate() {
        let number = index + 1;
        let parsed = record(number, &line?)?;
        if ended {
            return Err(TransferError::Line(number, "data after the end marker".to_owned()));
        }
        over.extend(
            too_large(&parsed, postgres).into_iter().map(|f| format!("line {number}: {f}")),
        );
        match parsed {
            Record::Header => {}
            Record::Run(_) => runs += 1,
            Record::Session(_) => sessions += 1,
            Record::End { runs: r, sessions: s } if (r, s) == (runs, sessions) => ended = true,
            Record::End { runs: said_runs, sessions: said_sessions } => {
                return Err(TransferError::CountsDiffer {
                    runs,
                    sessions,
                    said_runs,
                    said_sessions,
                });
            }
        }
    }
    if !ended {
        return Err(TransferError::NoEnd { runs, sessions });
    }
    if !over.is_empty() {
        let shown = over.iter().take(SHOWN_OVER).cloned().collect::<Vec<_>>().join("\n  ");
        let more = over.len().saturating_sub(SHOWN_OVER);
        let more = if more > 0 { format!("\n  … and {more} more") } else { String::new() };
        return Err(TransferError::TooLarge(over.len(), format!("{shown}{more}")));
    }
    Ok(Counts { runs, sessions, skipped: 0 })
}

/// What of `record` does not fit the target.
fn too_large(record: &Record, postgres: bool) -> Vec<String> {
    let mut found = match (record, postgres) {
        (Record::Run(run), true) => run.over_postgres_limits(),
        (Record::Session(s), true) => s.over_postgres_limits(),
        _ => Vec::new(),
    };
    if let Record::Session(s) = record {
        let context = crate::workflow::session::check_context(&s.context);
        found.extend(context.err().map(|e| format!("session {}: {e}", s.id)));
    }
    found
}

/// Imports an export that [`check`] passed (`total`: what it counted) into `store`, which
/// [`ready_for_import`] accepted. With `resume`, a run or Session the store holds already as the file has it is
/// skipped; one that differs stops the import.
pub async fn import(
    store: &dyn Store,
    lines: impl BufRead,
    total: Counts,
    resume: bool,
    progress: &mut dyn Progress,
) -> Result<Counts, TransferError> {
    let mut done = Counts::default();
    for (index, line) in lines.lines().enumerate() {
        let number = index + 1;
        if let Some(signal) = progress.stop_requested().await {
            return Err(TransferError::ImportStopped {
                signal,
                runs: done.runs,
                total_runs: total.runs,
                sessions: done.sessions,
                total_sessions: total.sessions,
            });
        }
        let refused = match record(number, &line?)? {
            Record::Run(run) => import_run(store, &run, resume)
                .await
                .map(|new| if new { done.runs += 1 } else { done.skipped += 1 })
                .map_err(|why| (format!("run {}", run.state.run_id), why)),
            Record::Session(s) => import_session(store, &s, resume)
                .await
                .map(|new| if new { done.sessions += 1 } else { done.skipped += 1 })
                .map_err(|why| (format!("session {}", s.id), why)),
            Record::Header | Record::End { .. } => continue,
        };
        if let Err((what, why)) = refused {
            return Err(TransferError::Refused {
                line: number,
                what,
                why,
                runs: done.runs,
                total_runs: total.runs,
                sessions: done.sessions,
                total_sessions: total.sessions,
            });
        }
        progress.record();
    }
    Ok(done)
}

/// Refuses a store that is not migrated, before an import reads its input.
pub async fn ready_for_import(store: &dyn MigrationStore, name: &str) -> Result<(), TransferError> {
    if store.migrations_applied().await?.is_empty() {
        return Err(TransferError::NotMigrated(name.to_owned()));
    }
    Ok(())
}

/// Imports `run` (`true`); with `resume`, a run the store holds already as the file has it
/// (same workflow, version, revision and events) is skipped (`false`). One that differs is a
/// conflict.
async fn import_run(
    store: &dyn WorkflowOps,
    run: &RunExport,
    resume: bool,
) -> Result<bool, String> {
    let id = &run.state.run_id;
    if resume {
        if let Some(there) = store.run_export(id).await.map_err(|e| e.to_string())? {
            let same = |r: &RunExport| {
                let s = &r.state;
                (s.workflow_id.clone(), s.workflow_version.clone(), s.revision, r.events.len())
            };
            if same(&there) != same(run) {
                return Err(format!(
                    "run {id} is in the store already and differs from the file's"
                ));
            }
            return Ok(false);
        }
    }
    store.run_import(run).await.map_err(|e| e.to_string())?;
    Ok(true)
}

/// Imports Session `s` (`true`); with `resume`, one the store holds already at the same
/// revisions is skipped (`false`). One that differs is a conflict.
async fn import_session(
    store: &dyn WorkflowOps,
    s: &SessionExport,
    resume: bool,
) -> Result<bool, String> {
    if resume {
        if let Some(there) = store.session_export(&s.id).await.map_err(|e| e.to_string())? {
            let same = |x: &SessionExport| (x.user_id.clone(), x.revision, x.context_revision);
            if same(&there) != same(s) {
                return Err(format!(
                    "session {} is in the store already and differs from the file's",
                    s.id
                ));
            }
            return Ok(false);
        }
    }
    store.session_import(s).await.map_err(|e| e.to_string())?;
    Ok(true)
}
