//! [`Wiring`]: what every binary builds before its work, written once for the five functions,
//! `jadpo-local` and the CLI. The application, its configuration read for the binary's
//! [`Mode`], the clock and the open stores; then the [`Engine`], given the queue and the
//! connections the binary uses (SQS and HTTP deployed, the in-process queue and HTTP locally,
//! none for the CLI, whose changes the relay sends).

use std::sync::Arc;

use jadpo_application::Application;
use jadpo_core::ports::{BlobError, Blobs, Connections, Queue};
use jadpo_core::{Clock, StoreError, SystemClock};
use jadpo_engine::Engine;
use jadpo_engine::sealing::SealingKeys;
use jadpo_engine::steps::RunEnv;

use crate::blobs::DirBlobs;
use crate::config::{Config, ConfigError, Mode, SealingSource};
use crate::connections::{ClientError, HttpConnections};
use crate::stores::{OpenSqlite, Stores, open_stores};

/// Why a binary could not be wired.
#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The files' directory could not be opened.
    #[error("the files' directory (JADPO_FILES_DIR): {0}")]
    Blobs(#[from] BlobError),
    /// The local sealing key file could not be read or created, or is malformed.
    #[error("sealing keys in {path}: {reason}")]
    SealingFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The application, its configuration, the clock and its open stores.
#[derive(Clone)]
pub struct Wiring {
    /// The application.
    pub app: Arc<Application>,
    /// The configuration read for this binary's mode.
    pub config: Config,
    /// The clock every use case reads.
    pub clock: Arc<dyn Clock>,
    /// The configured stores, open (PostgreSQL pools connect at first use).
    pub stores: Stores,
    /// The keys step answers are sealed under, if any.
    pub sealing: Option<Arc<SealingKeys>>,
    /// Where stored files' bytes live, when the application declares a file field.
    pub blobs: Option<Arc<dyn Blobs>>,
}

impl Wiring {
    /// Reads the configuration for `mode` from the process environment and opens every store.
    pub fn from_env(app: Arc<Application>, mode: Mode<'_>) -> Result<Self, WiringError> {
        let config = Config::from_process_env(&app, mode)?;
        Self::new(app, config, Arc::new(SystemClock), None)
    }

    /// Reads the configuration for `mode` from `vars` (the environment with its secrets
    /// resolved) and opens every store.
    pub fn from_vars(
        app: Arc<Application>,
        vars: &crate::config::Vars,
        mode: Mode<'_>,
    ) -> Result<Self, WiringError> {
        let config = Config::from_vars(&app, vars, mode)?;
        Self::new(app, config, Arc::new(SystemClock), None)
    }

    /// Opens every store of `config`; `sqlite://` stores through `sqlite`, given by the binaries
    /// that link SQLite (`from_env` and `from_vars`, the deployed functions', give none).
    pub fn new(
        app: Arc<Application>,
        config: Config,
        clock: Arc<dyn Clock>,
        sqlite: Option<OpenSqlite>,
    ) -> Result<Self, WiringError> {
        let sealing = match &config.sealing {
            SealingSource::Given(keys) => Some(Arc::clone(keys)),
            SealingSource::LocalFile(path) => Some(Arc::new(local_sealing_keys(path)?)),
            SealingSource::Absent => None,
        };
        let stores = open_stores(&config, Arc::clone(&clock), sqlite)?;
        // A bucket wins (the deployed functions open it themselves): the directory is opened,
        // and swept of cut-short writes, only when it is where the bytes live.
        let blobs = match (&config.files_dir, &config.files_bucket) {
            (Some(dir), None) if !app.file_fields().is_empty() => {
                Some(Arc::new(DirBlobs::open(dir)?) as Arc<dyn Blobs>)
            }
            _ => None,
        };
        Ok(Self { app, config, clock, stores, sealing, blobs })
    }

    /// HTTP clients for the application's connections, at their configured base URLs.
    pub fn http_connections(&self) -> Result<Arc<dyn Connections>, ClientError> {
        let connections =
            HttpConnections::new(self.config.connections.clone(), self.config.connection_timeout)?
                .with_headers(self.config.connection_headers.clone());
        Ok(Arc::new(connections))
    }

    /// The engine over these stores, sending on `queue` and calling `connections`.
    pub fn engine(&self, queue: Arc<dyn Queue>, connections: Arc<dyn Connections>) -> Engine {
        Engine {
            app: Arc::clone(&self.app),
            stores: self.stores.to_map(),
            queue,
            clock: Arc::clone(&self.clock),
            connections,
            settings: self.config.engine,
            runs: RunEnv {
                sealing: self.sealing.clone(),
                build: Arc::clone(&self.config.build),
                deadline: None,
            },
            blobs: self.blobs.clone(),
            breakers_seen: Default::default(),
            key_sets: Default::default(),
        }
    }
}

/// The local process's sealing keys: read from `path`, or made once and written there, readable
/// by its owner only (a development key; a deployment gives `JADPO_SEALING_KEYS` from a secret).
fn local_sealing_keys(path: &std::path::Path) -> Result<SealingKeys, WiringError> {
    let fail =
        |reason: String| WiringError::SealingFile { path: path.display().to_string(), reason };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let ring = SealingKeys::generate("local").map_err(|e| fail(e.to_string()))?;
            write_private(path, &ring).map_err(|e| fail(e.to_string()))?;
            ring
        }
        Err(e) => return Err(fail(e.to_string())),
    };
    SealingKeys::parse(text.trim()).map_err(|e| fail(e.to_string()))
}

fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}
