//! `jadpo verify`: the specification's eight operational checks on every store given a URL, and
//! the recovered revision and time (the newest event) an operator records after a restore.

use clap::Args;
use jadpo_core::SystemClock;
use jadpo_engine::workflow::verify::verify;
use jadpo_runtime::catalog_for;
use jadpo_workflow::rows::RecoveryPoint;
use serde_json::json;

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Only this store.
    #[arg(long)]
    store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn recovered_at(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| format!("{ms} ms"), |t| t.to_rfc3339())
}

/// The line the runbook asks the operator to record.
fn recovered_line(point: Option<&RecoveryPoint>) -> String {
    match point {
        Some(r) => format!(
            "RECOVERED to {} (run {} at revision {}; {} runs, {} events)",
            recovered_at(r.at_ms),
            r.run_id,
            r.revision,
            r.runs,
            r.events
        ),
        None => "RECOVERED to an empty workflow store (no events)".to_owned(),
    }
}

pub(crate) async fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let (failed, out) = checked(args.store.as_deref(), args.json).await?;
    if args.json {
        say!("{}", json!({"stores": out, "failed": failed}));
    }
    if failed > 0 {
        anyhow::bail!("{failed} verification check(s) failed");
    }
    Ok(())
}

/// Runs the checks on every store given a URL (or only `only`), printing each for people unless
/// `json`; returns how many failed and each store's JSON.
pub(crate) async fn checked(
    only: Option<&str>,
    json: bool,
) -> anyhow::Result<(usize, Vec<serde_json::Value>)> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, only).await?;
    let (config, stores) = (&wiring.config, &wiring.stores);
    let mut failed = 0;
    let mut out = Vec::new();
    for store_config in config.stores.iter().filter(|s| only.is_none_or(|o| o == s.name)) {
        let Some(store) = stores.get(&store_config.name) else { continue };
        let catalog = catalog_for(&app, store.as_ref())?;
        let registered = |id: &str| app.workflow(id).is_some();
        let report = verify(store.as_ref(), &catalog, &SystemClock, &registered).await?;
        failed += report.failed();
        if !json {
            say!("store {} ({})", store_config.name, store_config.url.display());
            for c in &report.checks {
                say!(
                    "  {} {}. {}: {}",
                    if c.passed { "PASS" } else { "FAIL" },
                    c.number,
                    c.name,
                    c.details
                );
            }
            say!("  {}", recovered_line(report.recovered.as_ref()));
        }
        out.push(json!({
            "store": store_config.name,
            "checks": report.checks.iter().map(|c| json!({"number": c.number, "name": c.name, "passed": c.passed, "details": c.details})).collect::<Vec<_>>(),
            "recovered": report.recovered.as_ref().map(|r| json!({
                "run_id": r.run_id, "revision": r.revision, "at_ms": r.at_ms,
                "at": recovered_at(r.at_ms), "runs": r.runs, "events": r.events,
            })),
        }));
    }
    Ok((failed, out))
}
