//! `jadpo schedules list | runs | pause | resume | trigger`: what operators see of schedules and
//! do to them, in the application's schedule store. Every change is recorded in
//! `jadpo_operator_actions` with the operator's name (`--operator`, else `JADPO_OPERATOR`, else
//! the OS user) and the database role in use.

use std::sync::Arc;

use clap::Subcommand;
use jadpo_engine::Engine;
use jadpo_engine::schedule::{ScheduleOps, sync};
use jadpo_schedule::{ScheduleRow, ScheduleRun};
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum SchedulesCommand {
    /// List the schedules with their state, timing, next due time and last tick.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a schedule's recent runs and skipped ticks, newest first, with reasons.
    Runs {
        /// The schedule.
        name: String,
        /// At most this many.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Pause a schedule: its ticks are recorded as skipped until it is resumed.
    Pause(Target),
    /// Resume a paused schedule from its next tick.
    Resume(Target),
    /// Run a schedule now, as an operator's run (its timing is unchanged).
    Trigger(Target),
}

#[derive(Debug, clap::Args)]
pub(crate) struct Target {
    /// The schedule.
    name: String,
    /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
    #[arg(long, env = "JADPO_OPERATOR")]
    operator: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn line(row: &ScheduleRow) -> String {
    let t = |v: Option<chrono::DateTime<chrono::Utc>>| {
        v.map_or_else(|| "-".to_owned(), crate::common::when)
    };
    format!(
        "{:<20} {:<8} {:<32} next {}  last tick {}",
        row.name,
        row.state(),
        row.expression,
        t(Some(row.next_due_at)),
        t(row.last_tick_at)
    )
}

fn run_json(r: &ScheduleRun) -> Value {
    json!({
        "id": r.id,
        "tick_at": r.tick_at.to_rfc3339(),
        "status": r.status,
        "trigger": r.trigger,
        "reason": r.reason,
        "outbox_id": r.outbox_id,
        "recorded_at": r.recorded_at.to_rfc3339(),
    })
}

pub(crate) async fn run(command: SchedulesCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, Some(app.schedule_store())).await?;
    let engine = crate::common::operator_engine(&wiring);
    let store = Arc::clone(engine.store(app.schedule_store())?);
    match command {
        SchedulesCommand::List { json } => {
            let rows = store.schedules_list().await?;
            let unstored: Vec<&str> = app
                .schedules()
                .map(|s| s.name.as_str())
                .filter(|n| !rows.iter().any(|r| r.name == *n))
                .collect();
            if json {
                let list: Vec<Value> = rows.iter().map(ScheduleRow::to_json).collect();
                say!("{}", json!({"schedules": list, "declared_not_yet_stored": unstored}));
                return Ok(());
            }
            if !rows.is_empty() {
                say!("{:<20} {:<8} {:<32} NEXT / LAST TICK", "SCHEDULE", "STATE", "TIMING");
            }
            rows.iter().for_each(|r| say!("{}", line(r)));
            for name in &unstored {
                say!("{name:<20} declared (stored by the next tick, or by any operator verb)");
            }
            if rows.is_empty() && unstored.is_empty() {
                say!("no schedules");
            }
        }
        SchedulesCommand::Runs { name, limit, json } => {
            crate::common::declared("schedule", &name, app.schedules().map(|s| s.name.as_str()))?;
            let runs = store.schedule_runs(Some(&name), limit).await?;
            if json {
                say!(
                    "{}",
                    json!({"schedule": name, "runs": runs.iter().map(run_json).collect::<Vec<_>>()})
                );
                return Ok(());
            }
            if !runs.is_empty() {
                say!("{:<23}  {:<7} {:<8}REASON", "TICK", "STATUS", "TRIGGER");
            }
            for r in &runs {
                let reason = r.reason.as_deref().map(|w| format!("  {w}")).unwrap_or_default();
                say!(
                    "{}  {:<7} {:<8}{reason}",
                    crate::common::when(r.tick_at),
                    r.status,
                    r.trigger
                );
            }
            if runs.is_empty() {
                say!("no runs recorded for {name:?}");
            }
        }
        SchedulesCommand::Pause(t) => act(&engine, t, Verb::Pause).await?,
        SchedulesCommand::Resume(t) => act(&engine, t, Verb::Resume).await?,
        SchedulesCommand::Trigger(t) => act(&engine, t, Verb::Trigger).await?,
    }
    Ok(())
}

enum Verb {
    Pause,
    Resume,
    Trigger,
}

async fn act(engine: &Engine, target: Target, verb: Verb) -> anyhow::Result<()> {
    let schedules = engine.app.schedules().map(|s| s.name.as_str());
    crate::common::declared("schedule", &target.name, schedules)?;
    let operator = crate::common::operator(target.operator)?;
    sync(engine).await?;
    let ops = ScheduleOps::new(engine, &operator);
    let name = target.name.as_str();
    let (value, text) = match verb {
        Verb::Pause => {
            let row = ops.pause(name).await?;
            (row.to_json(), format!("paused {name}: its ticks are skipped until resumed"))
        }
        Verb::Resume => {
            let row = ops.resume(name).await?;
            (
                row.to_json(),
                format!("resumed {name}: next due {}", crate::common::when(row.next_due_at)),
            )
        }
        Verb::Trigger => {
            let run = ops.trigger(name).await?;
            (
                json!({"run_id": run}),
                format!("triggered {name}: run {run} (the relay delivers its event)"),
            )
        }
    };
    if target.json {
        say!("{}", json!({"schedule": name, "operator": operator.name(), "result": value}));
    } else {
        say!("{text} (recorded as an operator action by {operator})");
    }
    Ok(())
}
