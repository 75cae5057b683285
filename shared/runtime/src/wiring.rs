//! [`Wiring`]: what every binary builds before its work, written once for the five functions,
//! `jadpo-local` and the CLI. The application, its configuration read for the binary's
//! [`Mode`], the clock and the open stores; then the [`Engine`], given the queue and the
//! connections the binary uses (SQS and HTTP deployed, the in-process queue and HTTP locally,
//! none for the CLI, whose changes the relay sends).

use std::sync::Arc;

use jadpo_core::app::Application;
use jadpo_core::ports::{Connections, Queue};
use jadpo_core::{Clock, StoreError, SystemClock};
use jadpo_engine::Engine;

use crate::config::{Config, ConfigError, Mode};
use crate::connections::{ClientError, HttpConnections};
use crate::stores::{Stores, open_stores};

/// Why a binary could not be wired.
#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
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
}

impl Wiring {
    /// Reads the configuration for `mode` from the process environment and opens every store.
    pub fn from_env(app: Arc<Application>, mode: Mode<'_>) -> Result<Self, WiringError> {
        let config = Config::from_process_env(&app, mode)?;
        Self::new(app, config, Arc::new(SystemClock))
    }

    /// Opens every store of `config`.
    pub fn new(
        app: Arc<Application>,
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, WiringError> {
        let stores = open_stores(&config, Arc::clone(&clock))?;
        Ok(Self { app, config, clock, stores })
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
        }
    }
}
