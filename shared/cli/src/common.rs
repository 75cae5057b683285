//! What every verb shares: the application, and the stores whose URLs the CLI was given.

use std::sync::Arc;

use anyhow::{Context, bail};
use jadpo_application::Application;
use jadpo_core::SystemClock;
use jadpo_core::ports::NoConnections;
use jadpo_engine::Engine;
use jadpo_engine::operate::Operator;
use jadpo_runtime::queue::RelayLater;
use jadpo_runtime::{Config, Mode, Wiring};

/// The application's declaration.
pub(crate) fn application() -> anyhow::Result<Arc<Application>> {
    Ok(Arc::new(jadpo_app::application().context("the application's declaration is invalid")?))
}

/// The operator's wiring: the stores whose URLs were given, checking that `only` (if given) is
/// one of them, that each exists (a verb creates no SQLite file: a mistyped path is an error,
/// not a new empty database) and that each is migrated.
pub(crate) async fn wiring(app: &Arc<Application>, only: Option<&str>) -> anyhow::Result<Wiring> {
    let wiring = open_wiring(app, only, false)?;
    for (name, store) in wiring.stores.iter() {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let tables = store.schema_tables().await.with_context(|| format!("store {name}"))?;
        if !tables.iter().any(|t| t == "jadpo_migrations") {
            let url = wiring.config.stores.iter().find(|s| s.name == name).map(|s| s.url.display());
            bail!(
                "store {name} ({}) is not migrated: run `jadpo migrate apply` first",
                url.unwrap_or_default()
            );
        }
    }
    Ok(wiring)
}

/// The wiring `jadpo migrate` uses: no migration check, and SQLite files created only when
/// `create` (`apply` makes the database it migrates; `status` reads one that exists).
pub(crate) fn open_wiring(
    app: &Arc<Application>,
    only: Option<&str>,
    create: bool,
) -> anyhow::Result<Wiring> {
    let mut config = Config::from_process_env(app, Mode::Operator)?;
    if let Some(only) = only {
        if !config.stores.iter().any(|s| s.name == only) {
            bail!(
                "store {only:?} has no URL here (stores with one: {})",
                config.stores.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
    }
    config.sqlite_create = create;
    Ok(Wiring::new(
        Arc::clone(app),
        config,
        Arc::new(SystemClock),
        Some(jadpo_runtime_sqlite::open),
    )?)
}

/// The operator: `--operator`, else `JADPO_OPERATOR`, else the operating-system account the
/// verb runs as (read from the system, not from `$USER`); an empty value counts as none. The
/// account it runs from (`user@host`) is recorded beside the name whatever the name.
pub(crate) fn operator(given: Option<String>) -> anyhow::Result<Operator> {
    let named = |name: Option<String>| name.filter(|n| !n.trim().is_empty());
    let name = named(given)
        .or_else(|| named(std::env::var("JADPO_OPERATOR").ok()))
        .or_else(|| named(whoami::username().ok()))
        .context(
            "no operator name: pass --operator NAME or set JADPO_OPERATOR (this process's \
             operating-system account has no name)",
        )?;
    Ok(Operator::new(&name)?.from_account(&os_account()))
}

/// `user@host` of the process, as the system tells it (`?` for a part it cannot tell).
pub(crate) fn os_account() -> String {
    let user = whoami::username().unwrap_or_else(|_| "?".to_owned());
    let host = whoami::hostname().unwrap_or_else(|_| "?".to_owned());
    format!("{user}@{host}")
}

/// `by NAME (ROLE, from user@host)`: who made a change, as the listings show it.
pub(crate) fn by(operator: &str, db_role: &str, account: Option<&str>) -> String {
    match account {
        Some(account) => format!("by {operator} ({db_role}, from {account})"),
        None => format!("by {operator} ({db_role})"),
    }
}

/// Refuses a `kind` named `name` the application does not declare, the same way for every verb:
/// `no flag named "x" is declared (declared: a, b)`.
pub(crate) fn declared<'a>(
    kind: &str,
    name: &str,
    declared: impl IntoIterator<Item = &'a str>,
) -> anyhow::Result<()> {
    let all: Vec<&str> = declared.into_iter().collect();
    if all.contains(&name) {
        return Ok(());
    }
    let list = if all.is_empty() { "none".to_owned() } else { all.join(", ") };
    bail!("no {kind} named {name:?} is declared (declared: {list})")
}

/// A time as every verb prints it for people (JSON answers carry RFC 3339).
pub(crate) fn when(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Prints a listing's header row once, before its first line (`headed` remembers), in text only;
/// `columns` is made only then.
pub(crate) fn header(headed: &mut bool, json: bool, columns: impl FnOnce() -> String) {
    if !json && !*headed {
        say!("{}", columns());
        *headed = true;
    }
}

/// Prints a verb's answer: `value` as one line of JSON with `--json`, else `text` for people.
pub(crate) fn answer(json: bool, text: &str, value: &serde_json::Value) {
    if json {
        say!("{value}");
    } else {
        say!("{text}");
    }
}

/// Ends a listing verb: with `--json`, the `items` under `key` as one document (their text lines
/// were printed as they came otherwise); with none, `none` for people.
pub(crate) fn end_list(json: bool, key: &str, items: Vec<serde_json::Value>, none: &str) {
    if json {
        say!("{}", serde_json::json!({ key: items }));
    } else if items.is_empty() {
        say!("{none}");
    }
}

/// An engine over the given stores for operator verbs: it calls no connection and sends
/// nothing (what it commits is put on the queue by the relay).
pub(crate) fn operator_engine(wiring: &Wiring) -> Engine {
    wiring.engine(Arc::new(RelayLater), Arc::new(NoConnections))
}
