//! `jadpo deliveries list | show | retry | discard | release`: what operators see of deliveries
//! and do to them, in every store given. Changes are recorded in `jadpo_operator_actions`.

use anyhow::bail;
use clap::Subcommand;
use std::sync::Arc;

use jadpo_application::Application;
use jadpo_core::model::delivery::{Delivery, DeliveryFilter, DeliveryStatus};
use jadpo_engine::operate::deliveries::{DeliveryOpError, DeliveryOps};
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
    /// Retry a dead (or waiting) delivery now with a fresh round of attempts; handled and
    /// discarded deliveries are refused.
    Retry(Change),
    /// Discard a pending or dead delivery for a reason: final, and visible.
    Discard {
        #[command(flatten)]
        change: Change,
        /// Why (recorded on the delivery and with the operator action).
        #[arg(long)]
        reason: String,
    },
    /// Release the deliveries a circuit breaker holds for a connection.
    Release {
        /// The connection.
        #[arg(long)]
        connection: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
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

/// Which deliveries a change applies to: one id, or every delivery matching a filter.
#[derive(Debug, clap::Args)]
pub(crate) struct Change {
    /// The delivery's id (or use --status / --subscriber).
    id: Option<String>,
    /// Every delivery with this status (pending or dead).
    #[arg(long, value_parser = parse_changeable, conflicts_with = "id")]
    status: Option<DeliveryStatus>,
    /// Every delivery of this subscriber (with --status, both must match).
    #[arg(long, conflicts_with = "id")]
    subscriber: Option<String>,
    /// At most this many per store when filtering.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    limit: u32,
    /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
    #[arg(long, env = "JADPO_OPERATOR")]
    operator: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// A status whose deliveries can still be retried or discarded: handled and discarded ones are
/// final, so asking for them is refused by the parser rather than matching nothing to change.
fn parse_changeable(text: &str) -> Result<DeliveryStatus, String> {
    match parse_status(text)? {
        s @ (DeliveryStatus::Pending | DeliveryStatus::Dead) => Ok(s),
        s => Err(format!("{} deliveries are final: only pending or dead ones change", s.as_str())),
    }
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
        "held": d.held_now().map(|h| json!({
            "connection": h.connection, "since": h.since.to_rfc3339(),
        })),
        "event": {
            "id": d.event.id,
            "type": d.event.event_type,
            "chain_depth": d.event.chain_depth,
            "payload": d.event.payload,
            "unreadable": d.unreadable,
        },
    })
}

fn line(store: &str, d: &Delivery) -> String {
    let failure =
        d.last_failure.as_deref().map(|f| format!("  last failure: {f}")).unwrap_or_default();
    let held = d.held_now().map_or_else(String::new, |h| {
        format!("  held by the {} breaker since {}", h.connection, crate::common::when(h.since))
    });
    let status = if d.held_now().is_some() { "held" } else { d.status.as_str() };
    let unreadable =
        d.unreadable.as_deref().map(|u| format!("  unreadable: {u}")).unwrap_or_default();
    format!(
        "{}  {:<9} {:<10} {:<16} attempts {:<2} {:<16} {}{held}{failure}{unreadable}",
        d.id,
        status,
        store,
        d.subscriber,
        d.attempts,
        d.event.event_type,
        crate::common::when(d.created_at),
    )
}

pub(crate) async fn run(command: DeliveriesCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    match command {
        DeliveriesCommand::List { status, subscriber, store, limit, json } => {
            let wiring = crate::common::wiring(&app, store.as_deref()).await?;
            let stores = &wiring.stores;
            let filter = DeliveryFilter { status, subscriber, limit };
            let (mut out, mut headed) = (Vec::new(), false);
            for (name, s) in
                stores.iter().filter(|(n, _)| store.as_deref().is_none_or(|only| only == *n))
            {
                for d in s.deliveries_list(&filter).await? {
                    crate::common::header(&mut headed, json, || {
                        format!(
                            "{:<36}  {:<9} {:<10} {:<16} {:<11} {:<16} CREATED",
                            "ID", "STATUS", "STORE", "SUBSCRIBER", "ATTEMPTS", "EVENT"
                        )
                    });
                    if !json {
                        say!("{}", line(name, &d));
                    }
                    out.push(to_json(name, &d));
                }
            }
            if json {
                say!("{}", json!({ "deliveries": out }));
            } else if out.is_empty() {
                say!("no deliveries match");
            }
        }
        DeliveriesCommand::Retry(change) => apply(&app, change, None).await?,
        DeliveriesCommand::Discard { change, reason } => apply(&app, change, Some(reason)).await?,
        DeliveriesCommand::Release { connection, operator, json } => {
            let connections = app.connections().iter().map(String::as_str);
            crate::common::declared("connection", &connection, connections)?;
            let operator = crate::common::operator(operator)?;
            let wiring = crate::common::wiring(&app, None).await?;
            let p = crate::common::operator_engine(&wiring);
            let ops = DeliveryOps::new(&p, &operator);
            let mut stores = Vec::new();
            for (store, ids) in ops.release(&connection).await? {
                if !json {
                    let n = ids.len();
                    say!(
                        "released {n} held deliveries for {connection} in store {store} (recorded by {operator})"
                    );
                    for id in &ids {
                        say!("  {id}");
                    }
                }
                stores.push(json!({"store": store, "released": ids.len(), "deliveries": ids}));
            }
            if json {
                say!("{}", json!({"connection": connection, "stores": stores}));
            }
            warn_if_held(&ops, &connection).await?;
        }
        DeliveriesCommand::Show { id, json } => {
            let wiring = crate::common::wiring(&app, None).await?;
            let stores = &wiring.stores;
            for (name, s) in stores.iter() {
                if let Some(d) = s.delivery_get(&id).await? {
                    let value = to_json(name, &d);
                    if json {
                        say!("{value}");
                    } else {
                        say!("{}", serde_json::to_string_pretty(&value)?);
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

/// Warns when the breaker of `connection` is open in some store: what was retried or released
/// there is held again at its next attempt, until the breaker is closed.
async fn warn_if_held(ops: &DeliveryOps<'_>, connection: &str) -> anyhow::Result<()> {
    let stores = ops.holding_breakers(connection).await?;
    if !stores.is_empty() {
        eprintln!(
            "warning: the circuit breaker of {connection} is open in store {}: its deliveries are \
             held again at their next attempt. Close it when the service is back: \
             jadpo breakers close {connection}",
            stores.join(", ")
        );
    }
    Ok(())
}

/// Retries (`reason` None) or discards the deliveries `change` names; each one is its own
/// transaction and operator action. Refusals are listed and make the command fail.
async fn apply(app: &Application, change: Change, reason: Option<String>) -> anyhow::Result<()> {
    let operator = crate::common::operator(change.operator)?;
    let app = Arc::new(app.clone());
    let wiring = crate::common::wiring(&app, None).await?;
    let stores = &wiring.stores;
    let p = crate::common::operator_engine(&wiring);
    let ops = DeliveryOps::new(&p, &operator);
    let ids = match (change.id, change.status, change.subscriber) {
        (Some(id), _, _) => vec![id],
        (None, None, None) => {
            bail!("name a delivery ID, or filter with --status and/or --subscriber")
        }
        (None, status, subscriber) => {
            let filter = DeliveryFilter { status, subscriber, limit: change.limit };
            let mut ids = Vec::new();
            for (_, store) in stores.iter() {
                ids.extend(store.deliveries_list(&filter).await?.into_iter().map(|d| d.id));
            }
            ids
        }
    };
    let verb = if reason.is_some() { "discarded" } else { "retried" };
    let (json, mut refused, mut done_json) = (change.json, Vec::new(), Vec::new());
    // The connections whose breakers held a retried delivery: each is checked once, after.
    let mut held_by = std::collections::BTreeSet::new();
    for id in &ids {
        let done = match &reason {
            None => ops.retry(id).await,
            Some(why) => ops.discard(id, why).await,
        };
        match done {
            Ok(d) => {
                if !json {
                    say!("{verb} {id} ({} was {})", d.subscriber, d.status.as_str());
                }
                done_json
                    .push(json!({"id": id, "subscriber": d.subscriber, "was": d.status.as_str()}));
                if let (Some(held), None) = (d.held, &reason) {
                    held_by.insert(held.connection);
                }
            }
            Err(e @ (DeliveryOpError::Store(_) | DeliveryOpError::NoReason)) => {
                return Err(e.into());
            }
            Err(e) => refused.push(e.to_string()),
        }
    }
    for connection in &held_by {
        warn_if_held(&ops, connection).await?;
    }
    if json {
        say!("{}", json!({ verb: done_json, "refused": refused }));
    } else if ids.is_empty() {
        say!("no deliveries match");
    }
    if !refused.is_empty() {
        bail!("{} of {} refused:\n  {}", refused.len(), ids.len(), refused.join("\n  "));
    }
    let next = if reason.is_some() {
        "discarding is final: nothing sends them again"
    } else {
        "the relay sends them now"
    };
    if !json {
        say!("{} {verb} by {operator}; {next}", ids.len());
    }
    Ok(())
}
