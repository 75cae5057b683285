//! `jadpo keys issue | list | revoke | rotate`: service keys for callers of the commit function.
//! Only a key's verifier is stored; a secret is shown once, when issued or rotated. Each change
//! is recorded in `jadpo_operator_actions` with who made it.

use chrono::Duration;
use clap::Subcommand;
use jadpo_core::model::service_key::{IssuedKey, KeyInfo, Scopes};
use jadpo_engine::operate::keys::KeyOps;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Issue a key for a service and print it once; only its verifier is stored.
    Issue {
        /// The calling service's name (letters, digits, '-', '_', '.').
        #[arg(long)]
        service: String,
        /// What the key may do, repeated: action:<name>, actions, runs, sessions, or '*'.
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// Days until the key stops working (default: never).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=3650))]
        expires_in_days: Option<u32>,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the keys, newest first: id, service, scopes, issued, expires, revoked (no secrets).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: it authenticates nobody from now on.
    Revoke {
        /// The key's id (from `jadpo keys list`).
        id: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Replace a key with a new one for the same service, scopes and expiry, and revoke it.
    Rotate {
        /// The key's id (from `jadpo keys list`).
        id: String,
        /// Who is acting (recorded); default `JADPO_OPERATOR`, else the OS user.
        #[arg(long, env = "JADPO_OPERATOR")]
        operator: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(command: KeysCommand) -> anyhow::Result<()> {
    let app = crate::common::application()?;
    let wiring = crate::common::wiring(&app, Some(app.services_store())).await?;
    let engine = crate::common::operator_engine(&wiring);
    let ops = KeyOps::new(&engine);
    match command {
        KeysCommand::Issue { service, scopes, expires_in_days, operator, json } => {
            let scopes = Scopes::parse(&scopes)?;
            let operator = crate::common::operator(operator)?;
            let expires_at =
                expires_in_days.map(|d| engine.clock.now() + Duration::days(i64::from(d)));
            let key = ops.issue(&service, expires_at, &scopes, &operator).await?;
            print_secret(&key, json, "service key");
        }
        KeysCommand::List { json } => {
            let keys = ops.list().await?;
            if json {
                say!("{}", json!({"keys": keys.iter().map(info_json).collect::<Vec<_>>()}));
            } else if keys.is_empty() {
                say!("no service keys");
            }
            let mut headed = false;
            for k in keys.iter().filter(|_| !json) {
                crate::common::header(&mut headed, json, || {
                    format!("{:<36}  {:<16} {:<40} ISSUED / STATE", "ID", "SERVICE", "SCOPES")
                });
                let state = k.revoked_at.map_or_else(
                    || {
                        k.expires_at.map_or("live".to_owned(), |t| {
                            format!("expires {}", crate::common::when(t))
                        })
                    },
                    |t| format!("revoked {}", crate::common::when(t)),
                );
                say!(
                    "{}  {:<16} {:<40} issued {}  {state}",
                    k.id,
                    k.service,
                    k.scopes.to_stored(),
                    crate::common::when(k.issued_at)
                );
            }
        }
        KeysCommand::Revoke { id, operator, json } => {
            let operator = crate::common::operator(operator)?;
            let key = ops.revoke(&id, &operator).await?;
            let text = format!(
                "revoked service key {} of {} (scopes {})",
                key.id, key.service, key.scopes
            );
            crate::common::answer(json, &text, &info_json(&key));
        }
        KeysCommand::Rotate { id, operator, json } => {
            let operator = crate::common::operator(operator)?;
            let key = ops.rotate(&id, &operator).await?;
            if !json {
                say!("service key {id} revoked; its replacement:");
            }
            print_secret(&key, json, "service key");
        }
    }
    Ok(())
}

fn info_json(k: &KeyInfo) -> serde_json::Value {
    json!({
        "id": k.id, "service": k.service, "scopes": k.scopes.to_stored(),
        "issued_at": k.issued_at.to_rfc3339(), "expires_at": k.expires_at.map(|t| t.to_rfc3339()),
        "revoked_at": k.revoked_at.map(|t| t.to_rfc3339()),
    })
}

fn print_secret(key: &IssuedKey, json: bool, what: &str) {
    if json {
        let expires = key.expires_at.map(|t| t.to_rfc3339());
        say!(
            "{}",
            json!({"id": key.id, "service": key.service, "key": key.secret, "scopes": key.scopes.to_stored(), "expires_at": expires})
        );
        return;
    }
    say!("{what} for {} (id {}), shown once — store it now:", key.service, key.id);
    say!("{}", key.secret);
    say!("scopes: {}", key.scopes);
    if let Some(at) = key.expires_at {
        say!("expires {}", crate::common::when(at));
    }
}
