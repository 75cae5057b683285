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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use jadpo_core::SystemClock;
use jadpo_core::model::service_key::{IssuedKey, Scopes};
use jadpo_engine::keys::KeyOps;
use jadpo_engine::operator::Operator;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_local::loops::{Inbox, delivery_loop, housekeeping_loop, relay_loop, schedule_loop};
use jadpo_local::page;
use jadpo_local::queue::InProcessQueue;
use jadpo_local::sink::{self, Sinks};
use jadpo_runtime::config::Vars;
use jadpo_runtime::{Config, Mode, Wiring, migrate_all, telemetry};
use tokio::sync::watch;

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
    let _alone = take_over_step_leases(&app, config, stores).await?;
    let (queue, rx, backlog) = InProcessQueue::counted();
    let engine = wiring.engine(Arc::new(queue), wiring.http_connections()?);
    let keys = Arc::clone(
        stores.get(app.services_store()).context("the services' store is not configured")?,
    );
    let key = local_key(&engine, keys.as_ref()).await?;
    let public_url = public_url(config);
    let console = local_console(&engine, listener.local_addr().context("the listener")?)?;
    print_banner(config, &key, keys.name(), &public_url, console.login_path.as_deref());

    let (stop, stopped) = watch::channel(false);
    let relay = tokio::spawn(relay_loop(engine.clone(), Duration::from_secs(1), stopped.clone()));
    let ticks = tokio::spawn(schedule_loop(engine.clone(), config.tick_interval, stopped.clone()));
    let housekeeping = tokio::spawn(housekeeping_loop(
        engine.clone(),
        config.housekeeping_interval,
        stopped.clone(),
    ));
    let workers = config.delivery_workers;
    let inbox = Inbox {
        rx,
        backlog: Some(backlog),
        batch: config.delivery_batch,
        linger: config.delivery_linger,
    };
    let worker = tokio::spawn(delivery_loop(engine.clone(), inbox, stopped, workers));
    let web = WebSettings { public_url: Some(public_url), secure_cookies: false };
    let state = HttpState::new(engine, web)?;
    // Stopping drains the queued deliveries while the server still answers the sink that stands
    // in for their services (else each would fail as unreachable and open its breaker); the
    // application's routes answer 503 meanwhile.
    let draining = Arc::new(AtomicBool::new(false));
    let refuse = Arc::clone(&draining);
    let app_routes = router(state).layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let stopping = refuse.load(Ordering::SeqCst);
            async move {
                if stopping {
                    return jadpo_http::problem(
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        "Stopping",
                        "the local process is stopping: try again once it has restarted",
                    );
                }
                next.run(request).await
            }
        },
    ));
    let shutdown = async move {
        let signal = stop_signal.wait().await;
        tracing::info!(signal, "stopping: no new requests; draining queued deliveries");
        draining.store(true, Ordering::SeqCst);
        let _ = stop.send(true);
        let _ = relay.await;
        let _ = ticks.await;
        let _ = housekeeping.await;
        let drained = worker.await.unwrap_or(0);
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

/// For each SQLite file store holding step records that this process is provably alone on (it holds the file's sole lock,
/// which a crashed predecessor's death released), ends every step lease left: a runner that held
/// one is dead, so its runs are taken up at once instead of after their lease (two minutes by
/// default). A PostgreSQL store, or a file another live process holds, keeps its leases: they
/// are waited out, as deployed. The locks, to hold while the process lives.
async fn take_over_step_leases(
    app: &jadpo_core::app::Application,
    config: &Config,
    stores: &jadpo_runtime::Stores,
) -> anyhow::Result<Vec<jadpo_runtime_sqlite::files::SoleLock>> {
    let mut held = Vec::new();
    let with_steps = app.feature_stores(jadpo_core::app::Feature::StepRecords);
    for store in &config.stores {
        // A store no calling handler writes keeps no step records, so no leases.
        if !with_steps.contains(&store.name.as_str()) {
            continue;
        }
        let jadpo_runtime::DatabaseUrl::Sqlite(jadpo_runtime::SqlitePath::File(path)) = &store.url
        else {
            continue;
        };
        let lock = jadpo_runtime_sqlite::files::sole_lock(path)
            .with_context(|| format!("the lock beside {}", path.display()))?;
        let Some(lock) = lock else {
            tracing::warn!(store = %store.name, "another process holds these files: its step leases are waited out");
            continue;
        };
        let opened = stores.get(&store.name).context("a configured store is not open")?;
        let ended = opened.step_leases_release_all(jadpo_core::Clock::now(&SystemClock)).await?;
        if ended > 0 {
            tracing::info!(store = %store.name, ended, "step leases of a stopped process taken over");
        }
        held.push(lock);
    }
    Ok(held)
}

/// The operator console at `/console`, behind the login link the banner prints (each login
/// names its operator; `JADPO_OPERATOR`, else `local`, suggested).
fn local_console(
    engine: &jadpo_engine::Engine,
    listen: std::net::SocketAddr,
) -> anyhow::Result<jadpo_console::Console> {
    let name = std::env::var("JADPO_OPERATOR").ok().filter(|n| !n.trim().is_empty());
    let operator = jadpo_engine::operator::Operator::new(name.as_deref().unwrap_or("local"))
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

/// The local run's service key, for service `local` (added to the application's service table
/// when it declares one): every action the application declares, runs and Sessions — each named,
/// not `*`, so the key shows what a scoped key looks like. Its issue is recorded as an operator
/// action by `jadpo-local`.
async fn local_key(
    engine: &jadpo_engine::Engine,
    keys: &dyn jadpo_core::Store,
) -> anyhow::Result<IssuedKey> {
    if let Some(services) = engine.app.services() {
        let sql = services.insert_if_missing_sql();
        keys.execute_once(&sql, &["local".into()]).await.with_context(|| {
            format!("adding service \"local\" to the services' table {}", services.table)
        })?;
    }
    let mut scopes: Vec<String> =
        engine.app.action_names().map(|a| format!("action:{a}")).collect();
    scopes.extend(["runs".to_owned(), "sessions".to_owned()]);
    if !engine.app.file_fields().is_empty() {
        scopes.push("files".to_owned());
    }
    let scopes = Scopes::parse(&scopes)?;
    let operator = Operator::new("jadpo-local")?;
    Ok(KeyOps::new(engine).issue("local", None, &scopes, &operator).await?)
}

/// The configuration and the listener bound to its address. `JADPO_LISTEN` may name port 0 (any
/// free port, as tests and scripts ask): the configuration is then read again with the port
/// bound, so that the banner, the public URL and the local sink's connection URLs all name it.
async fn bound(
    app: &jadpo_core::app::Application,
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
