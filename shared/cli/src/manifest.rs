//! `jadpo manifest`: what the application this binary was built with declares, as one document
//! of typed nodes — its stores (and the variable each one's URL comes from), actions and who may
//! call them, events and their subscribers, connections, schedules, flags, webhook sources,
//! workflows, sign-in
//! and audited entities, and a `system_table` node for each of the runtime's own tables with the
//! store the placement rules put it in and the feature that needs it.
//!
//! Format `jadpo.manifest`, version [`VERSION`] (docs/schema.md): an object with `format`,
//! `version`, `application` and `nodes`, each node an object whose `kind` says which fields it
//! has. Nodes come in a fixed order (by kind, then name), so two manifests of the same
//! declaration are the same text, and a diff between two releases shows what changed. A new
//! field or kind is added in a compatible version; renaming or removing one makes a new
//! version. It reads no database: it describes the declaration, not a deployment's state.

use clap::Args;
use jadpo_application::{Application, Callers, ServiceCallers};
use jadpo_schedule::Overlap;
use serde_json::{Value, json};

/// The manifest format's version.
pub(crate) const VERSION: u32 = 1;

#[derive(Debug, Args)]
pub(crate) struct ManifestArgs {
    /// Print JSON (the manifest's one form; without it, a summary for people).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ManifestArgs) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let manifest = manifest(&app);
    if args.json {
        say!("{}", serde_json::to_string_pretty(&manifest)?);
        return Ok(());
    }
    say!("application {} (manifest version {VERSION})", app.name());
    let nodes = manifest["nodes"].as_array().map_or(&[][..], Vec::as_slice);
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for node in nodes {
        let kind = node["kind"].as_str().unwrap_or("?");
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    for (kind, n) in kinds {
        say!("  {n:>3} {kind}");
    }
    say!("(jadpo manifest --json prints every node)");
    Ok(())
}

/// The manifest of `app`.
pub(crate) fn manifest(app: &Application) -> Value {
    let mut nodes = stores(app);
    nodes.extend(actions(app));
    nodes.extend(events(app));
    nodes.extend(connections(app));
    nodes.extend(schedules(app));
    nodes.extend(flags(app));
    nodes.extend(webhooks(app));
    nodes.extend(workflows(app));
    nodes.extend(entities(app));
    nodes.extend(system_tables(app));
    json!({"format": "jadpo.manifest", "version": VERSION, "application": app.name(), "nodes": nodes})
}

fn stores(app: &Application) -> Vec<Value> {
    app.stores()
        .iter()
        .map(|s| {
            json!({
                "kind": "store", "name": s, "default": s == app.default_store(),
                "url_variable": jadpo_runtime::config::url_variable(app, s),
            })
        })
        .collect()
}

fn callers(c: &Callers) -> Value {
    let services = match c.services_may() {
        ServiceCallers::None => json!("none"),
        ServiceCallers::Any => json!("any"),
        ServiceCallers::Named(names) => json!(names),
    };
    json!({"anyone": c.open_to_anyone(), "users": c.users_may(), "services": services})
}

fn actions(app: &Application) -> Vec<Value> {
    app.action_names()
        .filter_map(|name| app.action(name))
        .map(|a| json!({"kind": "action", "name": a.name, "store": a.store, "callers": callers(&a.callers)}))
        .collect()
}

fn events(app: &Application) -> Vec<Value> {
    let mut events: Vec<&String> = app.events().iter().collect();
    events.sort();
    let mut nodes: Vec<Value> = events
        .iter()
        .map(|event| {
            let subscribers: Vec<&str> =
                app.subscribers_of(event).map(|s| s.name.as_str()).collect();
            json!({"kind": "event", "name": event, "subscribers": subscribers})
        })
        .collect();
    let mut subscribers: Vec<_> = events.iter().flat_map(|e| app.subscribers_of(e)).collect();
    subscribers.sort_by(|a, b| a.name.cmp(&b.name));
    nodes.extend(subscribers.into_iter().map(|s| {
        json!({
            "kind": "subscriber", "name": s.name, "event": s.event, "store": s.store,
            "connection": s.connection, "steps": s.steps.as_str(),
            "retry": {
                "max_attempts": s.retry.max_attempts,
                "min_delay_ms": s.retry.min_delay.as_millis(),
                "max_delay_ms": s.retry.max_delay.as_millis(),
            },
        })
    }));
    nodes
}

fn connections(app: &Application) -> Vec<Value> {
    let mut names: Vec<&String> = app.connections().iter().collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let policy = app.breaker_policy(name).unwrap_or_default();
            json!({
                "kind": "connection", "name": name,
                "url_variable": format!("JADPO_CONNECTION_{}_URL", name.to_uppercase()),
                "key_window_secs": app.key_window(name).map(|w| w.as_secs()),
                "breaker": {
                    "failures_to_open": policy.failures_to_open,
                    "first_pause_ms": policy.first_pause.as_millis(),
                    "max_pause_ms": policy.max_pause.as_millis(),
                    "probe_timeout_ms": policy.probe_timeout.as_millis(),
                    "alert_after_ms": policy.alert_after.as_millis(),
                },
            })
        })
        .collect()
}

fn schedules(app: &Application) -> Vec<Value> {
    app.schedules()
        .map(|s| {
            let overlap = match s.overlap {
                Overlap::Skip => "skip",
                Overlap::Allow => "allow",
            };
            json!({
                "kind": "schedule", "name": s.name, "when": s.when.describe(), "event": s.event,
                "store": app.schedule_store(), "catch_up": s.catch_up, "overlap": overlap,
            })
        })
        .collect()
}

fn flags(app: &Application) -> Vec<Value> {
    app.flags()
        .map(|(name, default)| {
            json!({"kind": "flag", "name": name, "default": default.describe(), "store": app.flags_store()})
        })
        .collect()
}

fn webhooks(app: &Application) -> Vec<Value> {
    app.webhooks()
        .map(|w| {
            json!({
                "kind": "webhook_source", "name": w.name, "scheme": w.scheme.name(),
                "action": w.action, "secrets_variable": w.secrets_variable,
                "tolerance_secs": w.tolerance.as_secs(), "retention_secs": w.retention.as_secs(),
                "body_limit": w.body_limit, "rate_per_second": w.rate_per_second, "burst": w.burst,
            })
        })
        .collect()
}

fn workflows(app: &Application) -> Vec<Value> {
    app.workflow_ids()
        .filter_map(|id| app.workflow(id).map(|(def, store)| (id, def, store)))
        .map(|(id, def, store)| {
            let callers = app.workflow_callers(id).map(callers);
            let capabilities = def.capabilities();
            json!({"kind": "workflow", "name": id, "store": store, "callers": callers, "capabilities": capabilities})
        })
        .collect()
}

fn entities(app: &Application) -> Vec<Value> {
    let mut nodes = Vec::new();
    if let Some(u) = app.users() {
        nodes.push(
            json!({"kind": "user_entity", "name": u.entity, "store": u.store, "table": u.table}),
        );
    }
    if let Some(s) = app.services() {
        nodes.push(
            json!({"kind": "service_entity", "name": s.entity, "store": s.store, "table": s.table}),
        );
    }
    for a in app.audited() {
        nodes.push(json!({
            "kind": "audited_entity", "name": a.entity, "store": a.store, "table": a.table,
            "columns": a.columns, "retention_secs": a.retention.as_secs(),
        }));
    }
    nodes
}

fn system_tables(app: &Application) -> Vec<Value> {
    app.system_tables()
        .into_iter()
        .map(|p| json!({"kind": "system_table", "name": p.table, "store": p.store, "feature": p.feature.as_str()}))
        .collect()
}
