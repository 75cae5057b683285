//! `jadpo actions list`: the operator-action log — every change an operator verb made (keys,
//! tokens, deliveries, breakers, flags, schedules, erasures), newest first, from every store
//! given a URL, with who made it, under which database role, and the item's state before;
//! narrowed by the kind of item, the item, the operator and a time.

use chrono::{DateTime, Utc};
use clap::Subcommand;
use jadpo_core::model::operator::{ActionFilter, StoredAction};
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum ActionsCommand {
    /// List recorded operator actions, newest first (every store given a URL).
    List {
        /// Only actions on this kind of item: `service_key`, `user_session`, `delivery`,
        /// `connection` (a release), `breaker`, `schedule`, `run`, or an audited entity's name
        /// (an erasure). Flag changes have their own log: `jadpo flags history`.
        #[arg(long)]
        kind: Option<String>,
        /// Only actions on this item (with --kind).
        #[arg(long, requires = "kind")]
        item: Option<String>,
        /// Only actions by this operator (the name given with --operator when it acted).
        #[arg(long)]
        operator: Option<String>,
        /// Only actions at or after this time (RFC 3339, e.g. 2026-12-01T00:00:00Z).
        #[arg(long, value_parser = parse_since)]
        since: Option<DateTime<Utc>>,
        /// At most this many per store.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `--since`'s time, or a message saying the form it takes.
fn parse_since(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).map_err(|e| {
        format!("{text:?} is not an RFC 3339 time ({e}); write it as 2026-12-01T00:00:00Z")
    })
}

fn to_json(store: &str, a: &StoredAction) -> Value {
    let before = serde_json::from_str(&a.item_state).unwrap_or(Value::Null);
    json!({
        "store": store, "id": a.id, "acted_at": a.acted_at.to_rfc3339(), "action": a.action,
        "item_kind": a.item_kind, "item": a.item, "item_state": before,
        "operator": a.operator, "db_role": a.db_role, "os_account": a.os_account,
        "detail": a.detail,
    })
}

pub(crate) async fn run(command: ActionsCommand) -> anyhow::Result<()> {
    let ActionsCommand::List { kind, item, operator, since, limit, json } = command;
    let filter = ActionFilter { item_kind: kind, item, operator, since, limit };
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, None).await?;
    let (mut all, mut headed) = (Vec::new(), false);
    for (name, store) in wiring.stores.iter() {
        for a in store.operator_actions(&filter).await? {
            crate::common::header(&mut headed, json, || {
                format!(
                    "{:<23}  {:<10} {:<18} {:<12} {:<38} OPERATOR (DATABASE ROLE, FROM)  DETAIL",
                    "WHEN", "STORE", "ACTION", "KIND", "ITEM"
                )
            });
            if !json {
                let detail = a.detail.as_deref().map(|d| format!("  {d}")).unwrap_or_default();
                say!(
                    "{}  {:<10} {:<18} {:<12} {:<38} {}{detail}",
                    crate::common::when(a.acted_at),
                    name,
                    a.action,
                    a.item_kind,
                    a.item,
                    crate::common::by(&a.operator, &a.db_role, a.os_account.as_deref()),
                );
            }
            all.push(to_json(name, &a));
        }
    }
    crate::common::end_list(json, "actions", all, "no operator actions recorded");
    Ok(())
}
