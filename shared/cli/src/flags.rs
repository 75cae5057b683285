//! `jadpo flags list | set | history`: feature flags in the application's flags store; each
//! change is recorded in `jadpo_flag_changes` with who made it and the database role.

use anyhow::Context;
use clap::Subcommand;
use jadpo_core::model::flags::Rollout;
use jadpo_engine::operate::flags::FlagOps;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum FlagsCommand {
    /// List the flags with their state (declared default when never set).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Set a flag: on, off, or a percentage of subjects (e.g. 25%).
    Set {
        /// The flag.
        name: String,
        /// on, off, or 0%–100%.
        state: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A flag's changes, newest first: when, before → after, who, database role.
    History {
        /// The flag.
        name: String,
        /// At most this many.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: FlagsCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, Some(app.flags_store())).await?;
    let p = crate::common::operator_engine(&wiring);
    match command {
        FlagsCommand::List { json } => {
            let ops = FlagOps::new(&p);
            let flags = ops.list().await?;
            if json {
                let list: Vec<_> = flags
                    .iter()
                    .map(|(name, r, s)| {
                        json!({
                            "name": name,
                            "state": r.describe(),
                            "declared": app.flag_default(name).is_some(),
                            "updated_at": s.as_ref().map(|f| f.updated_at.to_rfc3339()),
                            "updated_by": s.as_ref().map(|f| f.updated_by.clone()),
                        })
                    })
                    .collect();
                say!("{}", json!({ "flags": list }));
                return Ok(());
            }
            if !flags.is_empty() {
                say!("{:<24} {:<5} SET", "FLAG", "STATE");
            }
            for (name, r, s) in &flags {
                let set = s.as_ref().map_or_else(
                    || "(default; never set)".to_owned(),
                    |f| format!("set {} by {}", crate::common::when(f.updated_at), f.updated_by),
                );
                say!("{name:<24} {:<5} {set}", r.describe());
            }
            if flags.is_empty() {
                say!("the application declares no flags");
            }
        }
        FlagsCommand::Set { name, state, operator, json } => {
            crate::common::declared("flag", &name, app.flags().map(|(f, _)| f.as_str()))?;
            let rollout = Rollout::parse(&state)?;
            let operator = crate::common::operator(operator)?;
            let ops = FlagOps::new(&p);
            let (text, value) = match ops.set(&name, rollout, &operator).await? {
                Some(c) => (
                    format!(
                        "{name}: {} → {} (recorded by {operator}, role {})",
                        c.before, c.after, c.db_role
                    ),
                    serde_json::json!({"flag": name, "changed": true,
                        "before": c.before.to_string(), "after": c.after.to_string()}),
                ),
                None => (
                    format!("{name} is already {}; nothing recorded", rollout.describe()),
                    serde_json::json!({"flag": name, "changed": false, "state": rollout.describe()}),
                ),
            };
            crate::common::answer(json, &text, &value);
        }
        FlagsCommand::History { name, limit, json } => {
            crate::common::declared("flag", &name, app.flags().map(|(f, _)| f.as_str()))?;
            let ops = FlagOps::new(&p);
            let changes = ops.history(&name, limit).await.context("reading the history")?;
            if json {
                let list: Vec<_> = changes
                    .iter()
                    .map(|c| {
                        json!({"changed_at": c.changed_at.to_rfc3339(), "before": c.before,
                               "after": c.after, "operator": c.operator, "db_role": c.db_role,
                               "os_account": c.os_account})
                    })
                    .collect();
                say!("{}", json!({"flag": name, "changes": list}));
                return Ok(());
            }
            let mut headed = false;
            for c in &changes {
                crate::common::header(&mut headed, json, || {
                    format!("{:<23}  BEFORE → AFTER  BY", "CHANGED AT")
                });
                say!(
                    "{}  {} → {}  {}",
                    crate::common::when(c.changed_at),
                    c.before,
                    c.after,
                    crate::common::by(&c.operator, &c.db_role, c.os_account.as_deref()),
                );
            }
            if changes.is_empty() {
                say!("no changes recorded for {name:?}");
            }
        }
    }
    Ok(())
}
