//! `jadpo-local`: every Jadpo function in one process, for a laptop.
//!
//! It reads the configuration (each store defaults to `./.jadpo/<store>.db`, SQLite), opens and
//! migrates every store (the embedded mode migrates on open), and serves HTTP on
//! `JADPO_LOCAL_ADDR` (default `127.0.0.1:8080`) until Ctrl-C. The commit, relay, delivery,
//! schedule and housekeeping loops join it as those capabilities land.

mod server;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use jadpo_core::SystemClock;
use jadpo_runtime::{Config, open_stores, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init_tracing();
    let app = jadpo_app::application().context("the application's declaration is invalid")?;
    let config = Config::from_process_env(&app, Some(Path::new(".jadpo")))?;
    let addr: SocketAddr = std::env::var("JADPO_LOCAL_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:8080".to_owned())
        .parse()
        .context("JADPO_LOCAL_ADDR must be host:port, e.g. 127.0.0.1:8080")?;
    let stores = open_stores(&config, Arc::new(SystemClock))?;
    server::migrate_all(&app, &stores).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!(%addr, stores = ?config.stores.iter().map(|s| s.url.display()).collect::<Vec<_>>(), "jadpo-local is up");
    println!("jadpo-local listening on http://{addr} (GET /healthz); Ctrl-C stops it");
    axum::serve(listener, server::router(stores))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("the HTTP server failed")
}
