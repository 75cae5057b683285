//! `jadpo breakers list | open | close`: each connection's circuit breaker in every store given,
//! and forcing one open or closed, recorded in `jadpo_operator_actions`.

use clap::Subcommand;
use jadpo_engine::operate::breakers::{BreakerOps, state_json};
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum BreakersCommand {
    /// List the breakers (every store given): state, run of failures, pause, probe.
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Open a connection's breakers: its deliveries are held until a probe (after the longest
    /// pause) or `close`.
    Open(Target),
    /// Close a connection's breakers and release the deliveries they hold.
    Close(Target),
}

#[derive(Debug, clap::Args)]
pub(crate) struct Target {
    connection: String,
    /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
    #[arg(long, env = "JADPO_OPERATOR")]
    operator: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(command: BreakersCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, None).await?;
    let stores = &wiring.stores;
    match command {
        BreakersCommand::List { json } => {
            let (mut all, mut headed) = (Vec::new(), false);
            for (name, store) in stores.iter() {
                for b in store.breakers_list().await? {
                    crate::common::header(&mut headed, json, || {
                        format!(
                            "{:<16} {:<10} {:<9} FAILURES / OPEN SINCE / PAUSE / PROBE",
                            "CONNECTION", "STORE", "STATE"
                        )
                    });
                    if !json {
                        say!(
                            "{:<16} {:<10} {:<9} failures {}{}",
                            b.connection,
                            name,
                            b.state.as_str(),
                            b.failures,
                            episode(&b)
                        );
                    }
                    all.push(state_json(name, &b));
                }
            }
            if json {
                say!("{}", json!({ "breakers": all }));
            } else if all.is_empty() {
                say!("no breaker has been used yet (all closed)");
            }
        }
        BreakersCommand::Open(t) => force(&wiring, t, true).await?,
        BreakersCommand::Close(t) => force(&wiring, t, false).await?,
    }
    Ok(())
}

/// An open (or probing) breaker's episode, in words: since when, its pause and the next probe,
/// or the probe under way.
fn episode(b: &jadpo_core::model::breaker::Breaker) -> String {
    let when = crate::common::when;
    let mut out = String::new();
    if let Some(t) = b.opened_at {
        out.push_str(&format!("  open since {}", when(t)));
    }
    if b.opened_at.is_some() || b.pause_ms > 0 {
        out.push_str(&format!("  pause {}s", b.pause_ms / 1000));
    }
    match (&b.probe_delivery, b.probe_started_at, b.reopen_at) {
        (Some(d), Some(t), _) => out.push_str(&format!("  probe {d} since {}", when(t))),
        (_, _, Some(t)) if b.opened_at.is_some() => {
            out.push_str(&format!("  next probe {}", when(t)))
        }
        _ => {}
    }
    out
}

async fn force(wiring: &jadpo_runtime::Wiring, target: Target, open: bool) -> anyhow::Result<()> {
    let connections = wiring.app.connections().iter().map(String::as_str);
    crate::common::declared("connection", &target.connection, connections)?;
    let operator = crate::common::operator(target.operator)?;
    let p = crate::common::operator_engine(wiring);
    let ops = BreakerOps::new(&p, &operator);
    let c = target.connection.as_str();
    let results = if open { ops.open(c).await? } else { ops.close(c).await? };
    let verb = if open { "opened" } else { "closed" };
    let mut stores = Vec::new();
    for r in results {
        let text = if r.changed {
            let released = if open {
                String::new()
            } else {
                format!(", {} held deliveries released", r.released)
            };
            format!("{verb} {c} in store {}{released} (recorded by {operator})", r.store)
        } else {
            format!("{c} in store {} was already {verb}; nothing recorded", r.store)
        };
        if !target.json {
            say!("{text}");
        }
        stores.push(json!({"store": r.store, "changed": r.changed, "released": r.released}));
    }
    if target.json {
        say!(
            "{}",
            json!({"connection": c, "state": if open { "open" } else { "closed" }, "stores": stores})
        );
    }
    Ok(())
}
