//! `jadpo deliveries list | show`: what operators see of deliveries, in every store given.

use anyhow::bail;
use clap::Subcommand;
use jadpo_core::pipeline::{Delivery, DeliveryFilter, DeliveryStatus};
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum DeliveriesCommand {
    /// List deliveries, newest first.
    List {
        /// Only this status: pending, handled, dead or discarded.
        #[arg(long, value_parser = parse_status)]
        status: Option<DeliveryStatus>,
        /// Only this subscriber.
        #[arg(long)]
        subscriber: Option<String>,
        /// Only this store.
        #[arg(long)]
        store: Option<String>,
        /// At most this many per store.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one delivery with its event.
    Show {
        /// The delivery's id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn parse_status(text: &str) -> Result<DeliveryStatus, String> {
    DeliveryStatus::parse(text)
        .ok_or_else(|| format!("{text:?} is not one of pending, handled, dead, discarded"))
}

fn to_json(store: &str, d: &Delivery) -> Value {
    json!({
        "id": d.id,
        "store": store,
        "subscriber": d.subscriber,
        "status": d.status.as_str(),
        "attempts": d.attempts,
        "next_attempt_at": d.next_attempt_at.to_rfc3339(),
        "last_attempt_at": d.last_attempt_at.map(|t| t.to_rfc3339()),
        "last_failure": d.last_failure,
        "finished_at": d.finished_at.map(|t| t.to_rfc3339()),
        "created_at": d.created_at.to_rfc3339(),
        "event": {
            "id": d.event.id,
            "type": d.event.event_type,
            "chain_depth": d.event.chain_depth,
            "payload": d.event.payload,
        },
    })
}

fn line(store: &str, d: &Delivery) -> String {
    let failure =
        d.last_failure.as_deref().map(|f| format!("  last failure: {f}")).unwrap_or_default();
    format!(
        "{}  {:<9} {:<10} {:<16} attempts {:<2} {:<16} {}{failure}",
        d.id,
        d.status.as_str(),
        store,
        d.subscriber,
        d.attempts,
        d.event.event_type,
        d.created_at.format("%Y-%m-%d %H:%M:%S"),
    )
}

pub(crate) async fn run(command: DeliveriesCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    match command {
        DeliveriesCommand::List { status, subscriber, store, limit, json } => {
            let (_, stores) = crate::common::stores(&app, store.as_deref())?;
            let filter = DeliveryFilter { status, subscriber, limit };
            let mut out = Vec::new();
            for (name, s) in
                stores.iter().filter(|(n, _)| store.as_deref().is_none_or(|only| only == *n))
            {
                for d in s.deliveries_list(&filter).await? {
                    if !json {
                        println!("{}", line(name, &d));
                    }
                    out.push(to_json(name, &d));
                }
            }
            if json {
                println!("{}", json!({ "deliveries": out }));
            } else if out.is_empty() {
                println!("no deliveries match");
            }
        }
        DeliveriesCommand::Show { id, json } => {
            let (_, stores) = crate::common::stores(&app, None)?;
            for (name, s) in stores.iter() {
                if let Some(d) = s.delivery_get(&id).await? {
                    let value = to_json(name, &d);
                    if json {
                        println!("{value}");
                    } else {
                        println!("{}", serde_json::to_string_pretty(&value)?);
                    }
                    return Ok(());
                }
            }
            bail!(
                "no delivery {id:?} in the stores given ({})",
                stores.iter().map(|(n, _)| n).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}
