//! Running the real `jadpo` binary against a database, as an operator would.

#![allow(dead_code, reason = "each test binary uses part of this module")]

use std::process::{Command, Output};

use chrono::Utc;
use jadpo_core::TransactionalStore;
use jadpo_core::model::delivery::{NewDelivery, NewEvent, Outcome};
use jadpo_core::model::operator::ActionFilter;
use jadpo_core::ports::PipelineStore;
use jadpo_test_harness::SqliteTestDb;
use serde_json::json;

/// Runs `jadpo args` with `DATABASE_URL` set to `url` (or unset) and no other store URLs.
pub(crate) fn jadpo_with(url: Option<&str>, args: &[&str]) -> Output {
    command(url, args).output().unwrap_or_else(|e| panic!("cannot run jadpo: {e}"))
}

/// The `jadpo args` command [`jadpo_with`] runs, for a test that sets up its streams itself.
pub(crate) fn command(url: Option<&str>, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jadpo"));
    cmd.args(args).env_remove("DATABASE_URL").env("RUST_LOG", "warn");
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("DATABASE_URL_")) {
        cmd.env_remove(key);
    }
    if let Some(url) = url {
        cmd.env("DATABASE_URL", url);
    }
    cmd
}

/// Runs `jadpo args` against `url`.
pub(crate) fn jadpo(url: &str, args: &[&str]) -> Output {
    jadpo_with(Some(url), args)
}

/// Standard output and error together, for messages.
pub(crate) fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The operator actions on `kind` and `item` (each when given), at most `limit`.
pub(crate) fn filter(kind: Option<&str>, item: Option<&str>, limit: u32) -> ActionFilter {
    let owned = |v: Option<&str>| v.map(str::to_owned);
    ActionFilter { item_kind: owned(kind), item: owned(item), limit, ..ActionFilter::default() }
}

/// Its standard output, after checking it succeeded.
pub(crate) fn ok(out: &Output) -> String {
    assert!(out.status.success(), "jadpo failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An event with two deliveries in `db`: `d-0` (`reserve_stock`) pending, `d-1`
/// (`send_receipt`) dead.
pub(crate) async fn seed(db: &SqliteTestDb) {
    let store = db.store();
    let now = Utc::now();
    let event = NewEvent {
        id: "e-1".into(),
        event_type: "order.placed".into(),
        payload: json!({"order_id": "o-1"}),
        traceparent: None,
        tracestate: None,
        chain_depth: 0,
        source: "place_order".into(),
        request_id: None,
        created_at: now,
    };
    let deliveries = ["reserve_stock", "send_receipt"]
        .iter()
        .enumerate()
        .map(|(i, s)| NewDelivery {
            id: format!("d-{i}"),
            outbox_id: "e-1".into(),
            subscriber: (*s).into(),
            created_at: now,
        })
        .collect::<Vec<_>>();
    let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
    store.outbox_append(tx.as_mut(), &event, &deliveries).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let dead = Outcome::Failed { failure: "mailer answered 503".into(), retry_at: None };
    store.delivery_record_outcome("d-1", &dead, now).await.unwrap_or_else(|e| panic!("{e}"));
}

/// `user@host` of this process, which the `jadpo` it starts runs as too.
pub(crate) fn jadpo_cli_account() -> String {
    let user = whoami::username().unwrap_or_else(|e| panic!("{e}"));
    let host = whoami::hostname().unwrap_or_else(|e| panic!("{e}"));
    format!("{user}@{host}")
}
