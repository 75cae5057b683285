//! Configuration from the environment, read once, validated at start.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `DATABASE_URL` | the default store's database: `postgres://…` or `sqlite://path` (`sqlite://:memory:`) | locally `./.jadpo/<store>.db`; else required |
//! | `DATABASE_URL_<STORE>` | another declared store's database, e.g. `DATABASE_URL_WAREHOUSE` | as above |
//! | `JADPO_INSECURE_DATABASE_TLS` | `1` lets a deployed function or the CLI reach a PostgreSQL server on another machine without `sslmode=verify-full`/`verify-ca` (a test bed only; such URLs are refused otherwise) | unset |
//! | `JADPO_PG_POOL_SIZE` | most PostgreSQL connections per process and store (count) | 4 |
//! | `JADPO_PG_CONNECT_TIMEOUT_MS` | time to establish one PostgreSQL connection (ms) | 5000 |
//! | `JADPO_PG_ACQUIRE_TIMEOUT_MS` | time to wait for a free pooled connection (ms) | 10000 |
//! | `JADPO_SQLITE_BUSY_TIMEOUT_MS` | time an SQLite statement waits for another process's lock (ms) | 5000 |
//! | `JADPO_MAX_CHAIN_DEPTH` | deepest chain of events subscribers may extend (count) | 8 |
//! | `JADPO_IDEMPOTENCY_RETENTION_SECS` | how long an idempotent response is replayed (s) | 86400 |
//! | `JADPO_REDELIVERY_AFTER_SECS` | after how long an enqueued, unfinished delivery is sent again (s) | 900; locally 30 |
//! | `JADPO_QUEUE_URL` | the SQS delivery queue's URL (deployed functions) | required when deployed |
//! | `JADPO_LISTEN` | where the local process serves HTTP (a loopback address unless `JADPO_LISTEN_PUBLIC=1`) | `127.0.0.1:3000` |
//! | `JADPO_LISTEN_PUBLIC` | `1` lets the local process listen on a non-loopback address | unset |
//! | `JADPO_CONNECTION_<NAME>_URL` | base URL of a declared connection (e.g. `JADPO_CONNECTION_MAILER_URL`) | locally the local sink `http://<listen>/sink/<name>`; else required |
//! | `JADPO_CONNECTION_<NAME>_HEADER` | a header sent with every call to the connection, `Name: value` (e.g. a provider's API key; a secret: never logged or shown) | none |
//! | `JADPO_INSECURE_HTTP_CONNECTIONS` | `1` lets a deployed function call connections over plain `http://` (a test bed only; deployed connections are `https://` otherwise) | unset |
//! | `JADPO_CONNECTION_TIMEOUT_MS` | longest a connection call may take (ms) | 10000 |
//! | `JADPO_SCHEDULE_LEASE_SECS` | how long a tick pass holds a schedule's lease (s) | 60 |
//! | `JADPO_DELIVERY_WORKERS` | how many delivery workers the local process runs (1–64) | 4 |
//! | `JADPO_BREAKER_TRUSTED_MS` | how long a connection's breaker this process last saw closed, with no failures, is trusted to be so without reading it again (0: read for every delivery) | 1000 |
//! | `JADPO_MAX_BACKLOG` | the queue's depth at which commits answer `503` with `Retry-After` until delivery catches up (0: no limit) | 50000 |
//! | `JADPO_DELIVERY_BATCH` | most messages a local delivery worker takes at once (1–100) | 64 |
//! | `JADPO_DELIVERY_LINGER_MS` | how long a local delivery worker holding less than a batch waits for more while half the pool is busy (0–100 ms; 0: never) | 2 |
//! | `JADPO_TICK_INTERVAL_SECS` | how often the local process ticks schedules (s) | 5 |
//! | `JADPO_HOUSEKEEPING_INTERVAL_SECS` | how often the local process runs housekeeping, after one pass at start (s) | 3600 |
//! | `JADPO_HOUSEKEEPING_LEASE_SECS` | how long a housekeeping pass holds its lease between batches (s) | 300 |
//! | `JADPO_HOUSEKEEPING_BATCH` | most rows one housekeeping transaction touches (count) | 1000 |
//! | `JADPO_RETAIN_HANDLED_SECS` | handled-delivery records are kept (s); at least the redelivery window | 1209600 (14 days) |
//! | `JADPO_RETAIN_FINISHED_SECS` | handled/discarded deliveries and then their outbox rows are kept (s) | 604800 (7 days) |
//! | `JADPO_RETAIN_DEAD_SECS` | dead deliveries are kept (s) | 2592000 (30 days) |
//! | `JADPO_RETAIN_SCHEDULE_RUNS_SECS` | schedule runs and skipped ticks are kept (s) | 2592000 (30 days) |
//! | `JADPO_OVERDUE_AFTER_SECS` | a schedule due longer ago raises the `schedule.overdue` alert (s) | 600 |
//! | `JADPO_SEALING_KEYS` | the keys step answers are sealed under, `id:base64key[,id:base64key…]` (32-byte keys; the first seals, all open; a secret) | locally `<dir>/sealing.keys`, created once; else required when the application declares a connection |
//! | `JADPO_BUILD` | the build's name, kept on each step record (e.g. a commit hash) | the runtime's version |
//! | `JADPO_STEP_LEASE_SECS` | how long a run with changing calls is held without recording a step (s) | 120 |
//! | `JADPO_RETAIN_STEP_RECORDS_SECS` | finished step records are kept (s) | 604800 (7 days) |
//! | `JADPO_UNFINISHED_STEPS_AFTER_SECS` | a run unfinished this long after it started raises the `steps.unfinished` alert (s) | 3600 |
//! | `JADPO_FILES_BUCKET` | the S3 bucket holding stored files' bytes (deployed functions; `AWS_ENDPOINT_URL_S3` points at another endpoint) | required deployed when the application declares file fields |
//! | `JADPO_FILES_DIR` | the directory holding stored files' bytes | locally `./.jadpo/files` |
//! | `JADPO_FILE_GRACE_SECS` | a stored file no record holds has its bytes deleted this long after housekeeping first saw it so (s) | 86400 |
//! | `JADPO_UPLOAD_GRACE_SECS` | stored bytes no row names (an unfinished upload) are deleted once this old (s) | 3600 |
//! | `JADPO_RELAY_MARGIN_MS` | how long before its invocation's deadline the deployed relay stops starting batches (ms) | 2000 |
//! | `JADPO_UPLOAD_QUOTA_FILES` | how many files each user may keep uploaded (held by a record or not yet; services have no limit) | 1000 |
//! | `JADPO_UPLOAD_QUOTA_BYTES` | how many bytes those files may hold together | 1073741824 (1 GiB) |
//! | `JADPO_ORPHAN_WINDOW_SECS` | how far back before the upload grace each pass looks for such bytes (s) | 604800 |
//! | `JADPO_RETAIN_FILE_TOMBSTONES_SECS` | a deleted file's row is kept this long, so a stale reference to it is refused (s) | 2592000 |
//! | `RUST_LOG` | log filter | `info` |

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jadpo_application::Application;
use jadpo_engine::EngineSettings;
use jadpo_engine::schedule::ScheduleSettings;
use jadpo_engine::sealing::SealingKeys;
use jadpo_engine::services::webhooks::verify::{Secret, read_secrets};
use jadpo_engine::settings::{StepSettings, WorkflowSettings};
use jadpo_store_postgres::PgOptions;

mod connections;
mod database;
mod values;

use values::{housekeeping, millis, ms, number, seconds, up_to_a_minute, upload_quota};

use connections::{connection_headers, connection_urls};
use database::check_database_tls;
pub use database::{DatabaseUrl, INSECURE_DATABASE_TLS, SqlitePath, redact};

/// Why the configuration was refused; nothing was opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A store has no URL and no local default applies.
    #[error("store {store:?} has no database: set {variable}")]
    MissingUrl {
        store: String,
        /// The variable to set.
        variable: String,
    },
    /// A URL is neither PostgreSQL nor SQLite.
    #[error("{variable} must start with postgres://, postgresql:// or sqlite://, got {shown:?}")]
    BadUrl {
        variable: String,
        /// The URL with any password hidden.
        shown: String,
    },
    /// A PostgreSQL URL is malformed (its sslmode, its host).
    #[error("{variable}: {reason}")]
    BadDatabaseUrl {
        variable: String,
        /// Why, without the URL's secrets.
        reason: String,
    },
    /// A deployed function or an operator would reach another machine's database without
    /// verifying who answers.
    #[error(
        "{variable} reaches {hosts} {how}: a database on another machine is reached only over \
         TLS that verifies the server; add sslmode=verify-full (with sslrootcert=<CA bundle>, \
         e.g. RDS's global-bundle.pem) to the URL, or set JADPO_INSECURE_DATABASE_TLS=1 to \
         connect anyway (a test bed only)"
    )]
    UnverifiedDatabase {
        variable: String,
        /// The hosts the URL names.
        hosts: String,
        /// What the URL asks for instead.
        how: &'static str,
    },
    /// A declared connection has no URL (outside local runs).
    #[error("connection {connection:?} has no URL: set {variable}")]
    MissingConnectionUrl {
        connection: String,
        /// The variable to set.
        variable: String,
    },
    /// A connection URL is not an http(s) URL.
    #[error("{variable} must be an http:// or https:// URL, got {shown:?}")]
    BadConnectionUrl {
        variable: String,
        /// The URL with any password hidden.
        shown: String,
    },
    /// A deployed connection's URL is plain `http://`.
    #[error(
        "{variable} must be an https:// URL when deployed (a test bed without TLS sets \
         JADPO_INSECURE_HTTP_CONNECTIONS=1)"
    )]
    PlaintextConnection { variable: String },
    /// A connection's header is not `Name: value` (the value, a secret, is never shown).
    #[error(
        "{variable} must be `Name: value` with a valid header name and value (the value is not shown)"
    )]
    BadConnectionHeader { variable: String },
    /// A declared webhook source has no secrets.
    #[error("webhook source {webhook:?} has no secrets: set {variable}")]
    MissingWebhookSecrets { webhook: String, variable: String },
    /// A webhook source's secrets are malformed (the secrets themselves are never shown).
    #[error("{variable}: {reason}")]
    BadWebhookSecrets { variable: String, reason: String },
    /// The sealing keys are malformed (the keys themselves are never shown).
    #[error("JADPO_SEALING_KEYS: {0}")]
    BadSealingKeys(String),
    /// A deployed function that may make changing calls has no sealing keys.
    #[error(
        "set JADPO_SEALING_KEYS (from a secret): the application declares connections, and a \
         changing call's answer is stored sealed under these keys"
    )]
    MissingSealingKeys,
    /// A deployed function has no queue.
    #[error("set JADPO_QUEUE_URL to the delivery queue's URL")]
    MissingQueue,
    /// A deployed function of an application with file fields has nowhere to keep the bytes.
    #[error(
        "the application declares file fields: set JADPO_FILES_BUCKET to the files' S3 bucket \
         (or JADPO_FILES_DIR to a directory)"
    )]
    MissingFilesBucket,
    /// A number is not a number, or out of range.
    #[error(
        "JADPO_LISTEN={listen} is not a loopback address: the local process serves its stand-in \
         services' sink and unauthenticated pages meant for this machine; set \
         JADPO_LISTEN_PUBLIC=1 to listen there anyway (behind a firewall or a TLS proxy)"
    )]
    PublicListen {
        /// The address asked for.
        listen: String,
    },
    #[error("{variable} must be {expected}, got {value:?}")]
    BadNumber {
        variable: String,
        /// What was expected.
        expected: String,
        /// What was given.
        value: String,
    },
    /// Handled-delivery records would be deleted while their messages may still come back.
    #[error(
        "JADPO_RETAIN_HANDLED_SECS ({handled}s) must be at least the redelivery window \
         JADPO_REDELIVERY_AFTER_SECS ({redelivery}s): a late duplicate would run its subscriber again"
    )]
    HandledRetentionTooShort {
        /// The handled records' retention (s).
        handled: u64,
        /// The redelivery window (s).
        redelivery: u64,
    },
    /// `DATABASE_URL_<STORE>` was given for the default store, which reads `DATABASE_URL`.
    #[error("{variable} is not read: the default store {store:?} takes its URL from DATABASE_URL")]
    DefaultStoreVariable {
        variable: String,
        /// The default store.
        store: String,
    },
    /// `DATABASE_URL_<STORE>` names a store the application does not declare.
    #[error(
        "{variable} is set, but the application declares no store {store:?} (it has: {declared})"
    )]
    UndeclaredStore {
        variable: String,
        /// The store it names.
        store: String,
        /// The declared stores.
        declared: String,
    },
}

/// Environment variables by name.
pub type Vars = std::collections::BTreeMap<String, String>;

/// One store's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// The declared store name.
    pub name: String,
    /// Its database.
    pub url: DatabaseUrl,
}

/// Everything read from the environment. Its `Debug` hides every secret: database and
/// connection URLs shown redacted, connection header values not at all.
#[derive(Clone)]
pub struct Config {
    /// One entry per declared store that has a database, the default store first.
    pub stores: Vec<StoreConfig>,
    /// PostgreSQL connection budget and timeouts.
    pub postgres: PgOptions,
    /// How long an SQLite statement waits for another process's lock (the adapter's default
    /// when not set).
    pub sqlite_busy_timeout: Option<Duration>,
    /// Whether opening an SQLite file that does not exist creates it (yes, except for the
    /// operator verbs that need an existing database).
    pub sqlite_create: bool,
    /// Engine limits.
    pub engine: EngineSettings,
    /// Where the local process listens.
    pub listen: SocketAddr,
    /// Base URL of each declared connection.
    pub connections: BTreeMap<String, url::Url>,
    /// The header (name, value) sent with every call to a connection, where one is configured.
    pub connection_headers: BTreeMap<String, (String, String)>,
    /// Longest a connection call may take.
    pub connection_timeout: Duration,
    /// The SQS queue deliveries travel on (deployed functions).
    pub queue_url: Option<String>,
    /// How many delivery workers the local process runs.
    pub delivery_workers: usize,
    /// Most messages a local delivery worker takes from the queue at once (delivered in batches).
    pub delivery_batch: usize,
    /// How long a local delivery worker holding less than a batch waits for more while another
    /// worker is busy (zero: never).
    pub delivery_linger: Duration,
    /// How often the local process ticks schedules.
    pub tick_interval: Duration,
    /// How often the local process runs housekeeping.
    pub housekeeping_interval: Duration,
    /// Where step answers' sealing keys come from.
    pub sealing: SealingSource,
    /// The build's name, kept on step records.
    pub build: std::sync::Arc<str>,
    /// The directory holding stored files' bytes (`JADPO_FILES_DIR`; locally `./.jadpo/files`).
    pub files_dir: Option<std::path::PathBuf>,
    /// The S3 bucket holding stored files' bytes when deployed (`JADPO_FILES_BUCKET`); it wins
    /// over a directory.
    pub files_bucket: Option<String>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let connections: BTreeMap<&str, String> = self
            .connections
            .iter()
            .map(|(name, url)| (name.as_str(), redact(url.as_str())))
            .collect();
        let headers: BTreeMap<&str, String> = self
            .connection_headers
            .iter()
            .map(|(name, (header, _))| (name.as_str(), format!("{header}: ***")))
            .collect();
        f.debug_struct("Config")
            .field("stores", &self.stores)
            .field("postgres", &self.postgres)
            .field("sqlite_busy_timeout", &self.sqlite_busy_timeout)
            .field("sqlite_create", &self.sqlite_create)
            .field("engine", &self.engine)
            .field("listen", &self.listen)
            .field("connections", &connections)
            .field("connection_headers", &headers)
            .field("connection_timeout", &self.connection_timeout)
            .field("queue_url", &self.queue_url)
            .field("delivery_workers", &self.delivery_workers)
            .field("delivery_batch", &self.delivery_batch)
            .field("delivery_linger", &self.delivery_linger)
            .field("tick_interval", &self.tick_interval)
            .field("housekeeping_interval", &self.housekeeping_interval)
            .field("sealing", &self.sealing)
            .field("build", &self.build)
            .field("files_dir", &self.files_dir)
            .field("files_bucket", &self.files_bucket)
            .finish()
    }
}

/// Where the sealing keys come from.
#[derive(Debug, Clone)]
pub enum SealingSource {
    /// `JADPO_SEALING_KEYS`, parsed.
    Given(std::sync::Arc<SealingKeys>),
    /// The local process's key file, read or created when the stores are opened.
    LocalFile(PathBuf),
    /// None (the operator's CLI, or an application with no connection): a changing call fails.
    Absent,
}

/// The variable holding `store`'s URL: `DATABASE_URL` for the default store.
pub fn url_variable(app: &Application, store: &str) -> String {
    if store == app.default_store() {
        "DATABASE_URL".to_owned()
    } else {
        format!("DATABASE_URL_{}", store.to_uppercase())
    }
}

/// Who is reading the configuration, which decides the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode<'a> {
    /// The local process: stores default to `<dir>/<store>.db`, connections to the local sink.
    Local(&'a Path),
    /// A deployed function that runs handlers (commit, delivery): every store and connection
    /// needs its URL, and the sealing keys are required when the application declares a
    /// connection.
    Deployed,
    /// A deployed scheduled function (outbox relay, schedule tick, housekeeping): every store
    /// and the queue; it calls no connection and opens no step answer, so it is given neither
    /// their URLs nor the sealing keys.
    DeployedScheduled,
    /// The operator's CLI: the default store needs its URL; it acts on the stores given one and
    /// calls no connection.
    Operator,
}

impl Mode<'_> {
    /// Whether this is a deployed function (either kind).
    pub fn deployed(self) -> bool {
        matches!(self, Self::Deployed | Self::DeployedScheduled)
    }
}

impl Config {
    /// Reads the configuration from `vars` (the process environment in binaries).
    pub fn from_vars(app: &Application, vars: &Vars, mode: Mode<'_>) -> Result<Self, ConfigError> {
        let local_dir = match mode {
            Mode::Local(dir) => Some(dir),
            Mode::Deployed | Mode::DeployedScheduled | Mode::Operator => None,
        };
        check_undeclared(app, vars)?;
        let env = &|name: &str| vars.get(name).cloned();
        let mut stores = Vec::new();
        for store in app.stores() {
            let variable = url_variable(app, store);
            let url = match (env(&variable).filter(|v| !v.is_empty()), local_dir) {
                (Some(url), _) => DatabaseUrl::parse(&variable, &url)?,
                (None, Some(dir)) => {
                    DatabaseUrl::Sqlite(SqlitePath::File(dir.join(format!("{store}.db"))))
                }
                (None, None) if store == app.default_store() || mode.deployed() => {
                    return Err(ConfigError::MissingUrl { store: store.clone(), variable });
                }
                (None, None) => continue,
            };
            if local_dir.is_none() {
                check_database_tls(env, &variable, &url)?;
            }
            stores.push(StoreConfig { name: store.clone(), url });
        }
        let pg = PgOptions::default();
        let postgres = PgOptions {
            pool_size: number(env, "JADPO_PG_POOL_SIZE", pg.pool_size, 1, 100)?,
            connect_timeout: millis(env, "JADPO_PG_CONNECT_TIMEOUT_MS", ms(pg.connect_timeout))?,
            acquire_timeout: millis(env, "JADPO_PG_ACQUIRE_TIMEOUT_MS", ms(pg.acquire_timeout))?,
        };
        let sqlite_busy_timeout = match env("JADPO_SQLITE_BUSY_TIMEOUT_MS") {
            Some(_) => Some(millis(env, "JADPO_SQLITE_BUSY_TIMEOUT_MS", 0)?),
            None => None,
        };
        let d = EngineSettings::default();
        // Locally a lost message is resent after 30 s, not the deployed queue's window.
        let redelivery_default =
            if local_dir.is_some() { LOCAL_REDELIVERY_SECS } else { d.redelivery_after.as_secs() };
        let depth = number(env, "JADPO_MAX_CHAIN_DEPTH", d.max_chain_depth as usize, 1, 100)?;
        let engine = EngineSettings {
            max_chain_depth: u32::try_from(depth).unwrap_or(d.max_chain_depth),
            idempotency_retention: seconds(
                env,
                "JADPO_IDEMPOTENCY_RETENTION_SECS",
                d.idempotency_retention.as_secs(),
            )?,
            redelivery_after: seconds(env, "JADPO_REDELIVERY_AFTER_SECS", redelivery_default)?,
            max_backlog: number(env, "JADPO_MAX_BACKLOG", d.max_backlog as usize, 0, 100_000_000)?
                as u64,
            schedules: ScheduleSettings {
                lease_ttl: seconds(
                    env,
                    "JADPO_SCHEDULE_LEASE_SECS",
                    d.schedules.lease_ttl.as_secs(),
                )?,
                ..d.schedules
            },
            housekeeping: housekeeping(env)?,
            breaker_trusted_for: up_to_a_minute(
                env,
                "JADPO_BREAKER_TRUSTED_MS",
                d.breaker_trusted_for,
            )?,
            upload_quota: upload_quota(env, d.upload_quota)?,
            // At most a minute: a margin as long as the invocation would relay nothing.
            relay_margin: up_to_a_minute(env, "JADPO_RELAY_MARGIN_MS", d.relay_margin)?,
            ..d
        };
        let (handled, redelivery) =
            (engine.housekeeping.handled_retention, engine.redelivery_after);
        if handled < redelivery {
            return Err(ConfigError::HandledRetentionTooShort {
                handled: handled.as_secs(),
                redelivery: redelivery.as_secs(),
            });
        }
        let listen_text = env("JADPO_LISTEN").unwrap_or_else(|| "127.0.0.1:3000".to_owned());
        let listen: std::net::SocketAddr =
            listen_text.parse().map_err(|_| ConfigError::BadNumber {
                variable: "JADPO_LISTEN".to_owned(),
                expected: "host:port, e.g. 127.0.0.1:3000".to_owned(),
                value: listen_text.clone(),
            })?;
        let public = env("JADPO_LISTEN_PUBLIC").is_some_and(|v| v.trim() == "1");
        if matches!(mode, Mode::Local(_)) && !listen.ip().is_loopback() && !public {
            return Err(ConfigError::PublicListen { listen: listen_text });
        }
        let connections = match mode {
            Mode::Operator | Mode::DeployedScheduled => BTreeMap::new(),
            Mode::Local(_) => connection_urls(app, env, Some(listen))?,
            Mode::Deployed => connection_urls(app, env, None)?,
        };
        let connection_headers = match mode {
            Mode::Operator | Mode::DeployedScheduled => BTreeMap::new(),
            Mode::Local(_) | Mode::Deployed => connection_headers(app, env)?,
        };
        let connection_timeout = millis(env, "JADPO_CONNECTION_TIMEOUT_MS", 10_000)?;
        let engine = EngineSettings {
            steps: StepSettings {
                lease: seconds(env, "JADPO_STEP_LEASE_SECS", d.steps.lease.as_secs())?,
                call_budget: connection_timeout,
                ..d.steps
            },
            workflows: WorkflowSettings {
                run_lease: seconds(env, "JADPO_RUN_LEASE_SECS", d.workflows.run_lease.as_secs())?,
                capability_deadline: seconds(
                    env,
                    "JADPO_CAPABILITY_DEADLINE_SECS",
                    d.workflows.capability_deadline.as_secs(),
                )?,
            },
            ..engine
        };
        let sealing = match (env("JADPO_SEALING_KEYS").filter(|k| !k.is_empty()), local_dir) {
            (Some(text), _) => SealingSource::Given(std::sync::Arc::new(
                SealingKeys::parse(&text)
                    .map_err(|e| ConfigError::BadSealingKeys(e.to_string()))?,
            )),
            (None, Some(dir)) => SealingSource::LocalFile(dir.join("sealing.keys")),
            (None, None) if mode == Mode::Deployed && !app.connections().is_empty() => {
                return Err(ConfigError::MissingSealingKeys);
            }
            (None, None) => SealingSource::Absent,
        };
        let files_dir = env("JADPO_FILES_DIR")
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| local_dir.map(|dir| dir.join("files")));
        let build = env("JADPO_BUILD")
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
        let queue_url = env("JADPO_QUEUE_URL").filter(|u| !u.is_empty());
        if mode.deployed() && queue_url.is_none() {
            return Err(ConfigError::MissingQueue);
        }
        let files_bucket = env("JADPO_FILES_BUCKET").filter(|b| !b.is_empty());
        let no_files_home = files_bucket.is_none() && files_dir.is_none();
        if mode.deployed() && !app.file_fields().is_empty() && no_files_home {
            return Err(ConfigError::MissingFilesBucket);
        }
        Ok(Self {
            stores,
            postgres,
            sqlite_busy_timeout,
            sqlite_create: true,
            engine,
            listen,
            connections,
            connection_headers,
            connection_timeout,
            queue_url,
            delivery_workers: number(env, "JADPO_DELIVERY_WORKERS", LOCAL_DELIVERY_WORKERS, 1, 64)?,
            delivery_batch: number(env, "JADPO_DELIVERY_BATCH", LOCAL_DELIVERY_BATCH, 1, 100)?,
            delivery_linger: Duration::from_millis(number(
                env,
                "JADPO_DELIVERY_LINGER_MS",
                LOCAL_DELIVERY_LINGER_MS,
                0,
                100,
            )? as u64),
            tick_interval: seconds(env, "JADPO_TICK_INTERVAL_SECS", 5)?,
            housekeeping_interval: seconds(env, "JADPO_HOUSEKEEPING_INTERVAL_SECS", 3600)?,
            sealing,
            build: build.into(),
            files_dir,
            files_bucket,
        })
    }

    /// Reads the process environment.
    pub fn from_process_env(app: &Application, mode: Mode<'_>) -> Result<Self, ConfigError> {
        Self::from_vars(app, &std::env::vars().collect(), mode)
    }
}

/// Each declared webhook source's secrets, from the variable the source names (`secret`, or
/// `old until <RFC 3339 time>, new` while a rotation is under way). A source without them is a
/// configuration error: its requests could never be verified.
pub fn webhook_secrets(
    app: &Application,
    vars: &Vars,
) -> Result<BTreeMap<String, Vec<Secret>>, ConfigError> {
    let mut secrets = BTreeMap::new();
    for source in app.webhooks() {
        let variable = &source.secrets_variable;
        let Some(text) = vars.get(variable).filter(|t| !t.trim().is_empty()) else {
            return Err(ConfigError::MissingWebhookSecrets {
                webhook: source.name.clone(),
                variable: variable.clone(),
            });
        };
        let read = read_secrets(&source.scheme, text).map_err(|e| {
            ConfigError::BadWebhookSecrets { variable: variable.clone(), reason: e.to_string() }
        })?;
        secrets.insert(source.name.clone(), read);
    }
    Ok(secrets)
}

/// [`webhook_secrets`] from the process environment.
pub fn webhook_secrets_from_env(
    app: &Application,
) -> Result<BTreeMap<String, Vec<Secret>>, ConfigError> {
    webhook_secrets(app, &std::env::vars().collect())
}

/// A `DATABASE_URL_<STORE>` for a store the application does not declare is a typo or a stale
/// setting; either way, acting without it would silently use the wrong database.
fn check_undeclared(app: &Application, vars: &Vars) -> Result<(), ConfigError> {
    for variable in vars.keys() {
        let Some(suffix) = variable.strip_prefix("DATABASE_URL_") else {
            continue;
        };
        let store = suffix.to_lowercase();
        if store == app.default_store() {
            return Err(ConfigError::DefaultStoreVariable { variable: variable.clone(), store });
        }
        if !app.stores().contains(&store) {
            return Err(ConfigError::UndeclaredStore {
                variable: variable.clone(),
                store,
                declared: app.stores().join(", "),
            });
        }
    }
    Ok(())
}

/// How many delivery workers the local process runs unless told: enough to overlap one
/// delivery's waits with another's work on two cores, within PostgreSQL's default pool of 4.
const LOCAL_DELIVERY_WORKERS: usize = 4;
/// Most messages a local delivery worker takes at once unless told: a backlog drains in batches
/// of 64 at 1.8× the rate of batches of 16 (BENCHMARKS.md, the drain shape); a worker only takes
/// what is queued, so a quiet queue's batches stay small.
const LOCAL_DELIVERY_BATCH: usize = 64;
/// How long a worker waits to fill a batch while another is busy, unless told (measured in
/// BENCHMARKS.md: batches of one cost a synced commit each).
const LOCAL_DELIVERY_LINGER_MS: usize = 2;

/// How long after its send the local process presumes a message lost (no queue to wait for).
const LOCAL_REDELIVERY_SECS: u64 = 30;

#[cfg(test)]
mod tests;
