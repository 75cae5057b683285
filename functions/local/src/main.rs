//! `jadpo-local`: the commit, relay, delivery, schedule-tick and housekeeping functions in one
//! process, for a laptop.
//!
//! Stores default to SQLite files under `./.jadpo/` (`DATABASE_URL` and
//! `DATABASE_URL_<STORE>` point them elsewhere, PostgreSQL included). On start it migrates every
//! store, issues a local service key (scoped to the application's actions, runs and Sessions)
//! and prints a curl line to try; it serves HTTP on
//! `JADPO_LISTEN` (default `127.0.0.1:3000`; port 0 takes any free port, printed at start). Ctrl-C or `SIGTERM` stops accepting requests, then
//! drains the deliveries already queued and closes the stores before exiting.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use jadpo_core::SystemClock;
use jadpo_core::model::service_key::IssuedKey;
use jadpo_engine::operate::Operator;
use jadpo_engine::operate::keys::KeyOps;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_local::loops::Inbox;
use jadpo_local::page;
use jadpo_local::queue::InProcessQueue;
use jadpo_local::sink::{self, Sinks};
use jadpo_local::stopping::{Intervals, Loops};
use jadpo_runtime::config::Vars;
use jadpo_runtime::{Config, Mode, Wiring, migrate_all, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init_tracing()?;
    // Test builds only: abort at the fault points JADPO_CRASH_AT names.
    #[cfg(feature = "crash-points")]
    jadpo_local::crash::arm_from_env()?;
    // Listening from the start: a stop request during start-up stops cleanly too.
    let stop_signal = jadpo_runtime::shutdown::StopSignal::listen()
        .context("cannot listen for Ctrl-C and SIGTERM")?;
    let app =
        Arc::new(jadpo_app::application().context("the application's declaration is invalid")?);
    let (config, listener) = bound(&app, std::env::vars().collect()).await?;
    let wiring = Wiring::new(
        Arc::clone(&app),
        config,
        Arc::new(SystemClock),
        Some(jadpo_runtime_sqlite::open),
    )?;
    let (config, stores) = (&wiring.config, &wiring.stores);
    migrate_all(&app, stores).await.context("migrating the stores")?;
    // Held until the process ends: the proof, while it lives, that it is alone on its files.
    let _alone = jadpo_runtime_sqlite::take_over_step_leases(&app, config, stores, &SystemClock)
        .await
        .context("taking over the step leases of a stopped process")?;
    let (queue, rx, backlog) = InProcessQueue::counted();
    let engine = wiring.engine(Arc::new(queue), wiring.http_connections()?);
    let key = KeyOps::new(&engine)
        .issue_local(&Operator::new("jadpo-local")?)
        .await
        .context("issuing the local service key")?;
    let public_url = public_url(config);
    let console = local_console(&engine, listener.local_addr().context("the listener")?)?;
    print_banner(config, &key, app.services_store(), &public_url, console.login_path.as_deref());

    let inbox = Inbox {
        rx,
        backlog: Some(backlog),
        batch: config.delivery_batch,
        linger: config.delivery_linger,
    };
    let intervals = Intervals {
        relay: Duration::from_secs(1),
        tick: config.tick_interval,
        housekeeping: config.housekeeping_interval,
    };
    let loops = Loops::start(&engine, &intervals, inbox, config.delivery_workers);
    let web = WebSettings { public_url: Some(public_url), secure_cookies: false };
    let secrets = jadpo_runtime::config::webhook_secrets_from_env(&engine.app)?;
    let state = HttpState::new(engine, web)?.with_webhook_secrets(secrets);
    let app_routes = loops.refusing_while_stopping(router(state));
    let shutdown = async move {
        let signal = stop_signal.wait().await;
        tracing::info!(signal, "stopping: no new requests; draining queued deliveries");
        let drained = loops.drain().await;
        tracing::info!(deliveries = drained, "stopped");
    };
    axum::serve(
        listener,
        app_routes
            .merge(sink::router(Sinks::default()))
            .merge(page::router())
            .method_not_allowed_fallback(jadpo_http::wrong_method)
            .layer(axum::middleware::map_response(jadpo_http::as_problem))
            // Its pages answer HTML, refusals included: merged past the API's problem layer.
            .merge(console.router)
            // Each request knows its peer's address: sign-in counts per source address.
            .into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .context("the HTTP server failed")?;
    Ok(())
}

/// The operator console at `/console`, behind the login link the banner prints (each login
/// names its operator; `JADPO_OPERATOR`, else `local`, suggested).
fn local_console(
    engine: &jadpo_engine::Engine,
    listen: std::net::SocketAddr,
) -> anyhow::Result<jadpo_console::Console> {
    let name = std::env::var("JADPO_OPERATOR").ok().filter(|n| !n.trim().is_empty());
    let operator = jadpo_engine::operate::Operator::new(name.as_deref().unwrap_or("local"))
        .context("JADPO_OPERATOR is not an operator name")?;
    // Off loopback only after JADPO_LISTEN_PUBLIC=1, the explicit flag plain HTTP there needs.
    let settings = jadpo_console::ConsoleSettings {
        listen,
        no_login: false,
        hosts: Vec::new(),
        plain_http_on_network: !listen.ip().is_loopback(),
    };
    Ok(jadpo_console::console(engine.clone(), operator, &settings)?)
}

/// The configuration and the listener bound to its address. `JADPO_LISTEN` may name port 0 (any
/// free port, as tests and scripts ask): the configuration is then read again with the port
/// bound, so that the banner, the public URL and the local sink's connection URLs all name it.
async fn bound(
    app: &jadpo_application::Application,
    mut vars: Vars,
) -> anyhow::Result<(Config, tokio::net::TcpListener)> {
    let mode = Mode::Local(Path::new(".jadpo"));
    let config = Config::from_vars(app, &vars, mode)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {} (set JADPO_LISTEN)", config.listen))?;
    let addr = listener.local_addr().context("the listener has no address")?;
    if addr == config.listen {
        return Ok((config, listener));
    }
    vars.insert("JADPO_LISTEN".to_owned(), addr.to_string());
    Ok((Config::from_vars(app, &vars, mode)?, listener))
}

/// Where people reach this server: mailed sign-in links point there, and it is the passkeys'
/// relying party. `JADPO_PUBLIC_URL`, else the listen address — by the name `localhost` when it
/// is a loopback address, since browsers offer passkeys on `localhost` but never on an IP.
fn public_url(config: &Config) -> String {
    if let Some(url) = std::env::var("JADPO_PUBLIC_URL").ok().filter(|u| !u.is_empty()) {
        return url;
    }
    let addr = config.listen;
    if addr.ip().is_loopback() {
        format!("http://localhost:{}", addr.port())
    } else {
        format!("http://{addr}")
    }
}

fn print_banner(
    config: &Config,
    key: &IssuedKey,
    default_store: &str,
    public_url: &str,
    console: Option<&str>,
) {
    let addr = config.listen;
    println!("jadpo-local listening on http://{addr}");
    for store in &config.stores {
        println!("  store {:<10} {}", store.name, store.url.display());
    }
    println!("  service key (store {default_store}, shown once): {}", key.secret);
    println!("  its scopes: {}", key.scopes);
    let key = &key.secret;
    println!("try:");
    println!(
        "  curl -s -X POST http://{addr}/actions/place_order -H 'Authorization: Bearer {key}' \
         -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1' \
         -d '{{\"customer\": \"c1\", \"items\": [{{\"sku\": \"A\", \"qty\": 1}}]}}'"
    );
    println!(
        "  sign in as a customer: open {public_url}/ (the link and code print here, and land at \
         /sink/mailer; once signed in, add a passkey and use it next time)"
    );
    println!("  watch the mailer sink: curl -s http://{addr}/sink/mailer");
    println!(
        "  make it fail:          curl -s -X PUT http://{addr}/sink/mailer/mode -d '{{\"fail\": true}}'"
    );
    // The operator verbs' hints name the store the process uses (its password hidden).
    let db = config
        .stores
        .iter()
        .find(|s| s.name == default_store)
        .map_or_else(|| "sqlite://.jadpo/main.db".to_owned(), |s| s.url.display());
    println!(
        "  the operator's `jadpo`: make install puts it on the PATH (or: cargo run -q -p jadpo-cli --)"
    );
    println!("  see deliveries:        DATABASE_URL={db} jadpo deliveries list");
    println!("  schedules:             DATABASE_URL={db} jadpo schedules list");
    println!(
        "  a user's API token:    DATABASE_URL={db} jadpo tokens issue --user <customer id from /me>"
    );
    // Part of the banner, before its last line: a reader that stops there (a test, `| head`)
    // closes the pipe, and a line printed after it would fail.
    if let Some(path) = console {
        println!("  operator console:      http://{}{path}", config.listen);
    }
    println!(
        "Ctrl-C or SIGTERM stops it (queued deliveries are finished first, the stores closed)."
    );
}
