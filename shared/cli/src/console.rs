//! `jadpo console`: the operator console (`jadpo-console`) for the stores this CLI is given,
//! acting as the operator the other verbs would record. It prints its login link and serves
//! until interrupted.
//!
//! Why it checks the address before binding: a console without a login on an address others
//! reach would hand them the operator's database rights, and one with a login there would send
//! its link and cookie in clear; each is refused with what to do instead.

use std::net::SocketAddr;

use anyhow::Context;
use jadpo_console::{ConsoleSettings, console, listen_allowed};

use crate::common;

/// `jadpo console`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct ConsoleArgs {
    /// Where to listen (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// Another host name it answers to (a port-forward's); repeatable.
    #[arg(long = "host")]
    hosts: Vec<String>,
    /// Ask for no login: refused unless --listen is a loopback address.
    #[arg(long)]
    no_login: bool,
    /// Serve plain HTTP on a non-loopback --listen (a TLS-terminating proxy in front); refused
    /// without it.
    #[arg(long)]
    plain_http_on_network: bool,
    /// The name a login suggests (each login gives its own, recorded); default
    /// `JADPO_OPERATOR`, else the OS user.
    #[arg(long, env = "JADPO_OPERATOR")]
    operator: Option<String>,
}

/// Serves the console until interrupted.
pub(crate) async fn run(args: ConsoleArgs) -> anyhow::Result<()> {
    listen_allowed(args.listen, !args.no_login, args.plain_http_on_network)?;
    let operator = common::operator(args.operator)?;
    let app = common::application()?;
    let wiring = common::wiring(&app, None).await?;
    let engine = common::operator_engine(&wiring);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let listen = listener.local_addr().context("the listener's address")?;
    let settings = ConsoleSettings {
        listen,
        no_login: args.no_login,
        hosts: args.hosts,
        plain_http_on_network: args.plain_http_on_network,
    };
    let console = console(engine, operator, &settings)?;
    match &console.login_path {
        // One line: a reader may stop after it (the link works once; docs/console.md).
        Some(path) => say!("console: http://{listen}{path}"),
        None => say!("console: http://{listen}/console/ (no login: this machine only)"),
    }
    axum::serve(listener, console.router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("the console's server failed")
}
