//! `jadpo keys issue`: service keys for callers of the commit function.

use anyhow::Context;
use chrono::Duration;
use clap::Subcommand;
use jadpo_core::{Clock, SystemClock};
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Issue a key for a service and print it once; only its verifier is stored.
    Issue {
        /// The calling service's name (letters, digits, '-', '_', '.').
        #[arg(long)]
        service: String,
        /// Days until the key stops working (default: never).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=3650))]
        expires_in_days: Option<u32>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: KeysCommand) -> anyhow::Result<()> {
    let KeysCommand::Issue { service, expires_in_days, json } = command;
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, Some(app.default_store()))?;
    let stores = &wiring.stores;
    let store = stores.get(app.default_store()).context("the default store is not configured")?;
    let clock = SystemClock;
    let expires_at = expires_in_days.map(|d| clock.now() + Duration::days(i64::from(d)));
    let key = store.service_key_issue(&service, expires_at, &clock).await?;
    if json {
        let expires = key.expires_at.map(|t| t.to_rfc3339());
        println!(
            "{}",
            json!({"id": key.id, "service": key.service, "key": key.secret, "expires_at": expires})
        );
    } else {
        println!("service key for {} (id {}), shown once — store it now:", key.service, key.id);
        println!("{}", key.secret);
        if let Some(at) = key.expires_at {
            println!("expires {}", at.format("%Y-%m-%d %H:%M:%S UTC"));
        }
    }
    Ok(())
}
