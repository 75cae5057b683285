//! `jadpo audit show | erase`: a record's history from the audit trail, and erasure (the record
//! and its audit rows deleted together, recorded as an operator action without the record's
//! content).

use anyhow::Context;
use clap::Subcommand;
use jadpo_core::SystemClock;
use jadpo_core::model::audit::replay;
use jadpo_engine::audit;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// A record's changes in order (who, when, through which action and request, each field
    /// before and after), and whether they replay to its current state.
    Show {
        /// The entity (its born name, e.g. `order`).
        entity: String,
        /// The record's id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Erase a record: delete it and its audit rows in one transaction.
    Erase {
        entity: String,
        /// The record's id.
        id: String,
        /// Why (recorded with the operator action).
        #[arg(long)]
        reason: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: AuditCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let entity = match &command {
        AuditCommand::Show { entity, .. } | AuditCommand::Erase { entity, .. } => entity.clone(),
    };
    crate::common::declared(
        "audited entity",
        &entity,
        app.audited().iter().map(|a| a.entity.as_str()),
    )?;
    let spec = app.audit_spec(&entity).cloned().context("the audited entity vanished")?;
    let wiring = crate::common::wiring(&app, Some(&spec.store)).await?;
    let stores = &wiring.stores;
    let store = stores.get(&spec.store).context("the entity's store has no URL")?;
    match command {
        AuditCommand::Show { id, json, .. } => {
            let rows = store.audit_rows(&spec.entity, &id).await?;
            let current = store.audit_current(&spec, &id).await?;
            let replayed = replay(&rows);
            let replays = replayed.as_ref() == Ok(&current);
            if json {
                let list: Vec<_> = rows
                    .iter()
                    .map(|r| {
                        json!({"seq": r.seq, "changed_at": crate::common::when(r.changed_at), "kind": r.kind,
                               "actor": r.actor, "db_role": r.db_role, "action": r.action, "request_id": r.request_id,
                               "trace": r.trace, "changes": r.changes, "encoding": r.encoding,
                               "unreadable": r.unreadable})
                    })
                    .collect();
                say!(
                    "{}",
                    json!({"entity": spec.entity, "id": id, "changes": list, "current": current,
                           "replays_to_current": replays})
                );
                return Ok(());
            }
            for r in &rows {
                say!(
                    "#{} {} {:<6} by {}{} via {} (request {})",
                    r.seq,
                    crate::common::when(r.changed_at),
                    r.kind,
                    r.actor,
                    r.db_role.as_ref().map(|role| format!(" (role {role})")).unwrap_or_default(),
                    r.action.as_deref().unwrap_or("-"),
                    r.request_id.as_deref().unwrap_or("-")
                );
                if let Some(why) = &r.unreadable {
                    say!("    unreadable: {why}");
                }
                if let Some(fields) = r.changes.as_object() {
                    for (field, change) in fields {
                        say!("    {field}: {} → {}", change["before"], change["after"]);
                    }
                }
            }
            if rows.is_empty() {
                say!("no audit rows for {} {id:?}", spec.entity);
            } else if let Err(why) = &replayed {
                say!("the changes cannot be replayed: {why}");
            } else if replays {
                say!("the changes replay to the record's current state");
            } else {
                say!("the changes do NOT replay to the record's current state");
            }
        }
        AuditCommand::Erase { id, reason, operator, json, .. } => {
            let operator = crate::common::operator(operator)?;
            let (store, clock) = (store.as_ref(), &SystemClock);
            let removed =
                audit::erase_as_operator(store, clock, &operator, &spec, &id, &reason).await?;
            let text = format!(
                "erased {} {id} and {removed} audit rows (recorded by {operator})",
                spec.entity
            );
            let value =
                serde_json::json!({"entity": spec.entity, "id": id, "audit_rows_erased": removed});
            crate::common::answer(json, &text, &value);
        }
    }
    Ok(())
}
