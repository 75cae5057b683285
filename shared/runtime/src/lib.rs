//! `jadpo-runtime`: what every Jadpo binary does before and around its real work.
//!
//! It reads the environment once into typed [`config::Config`] (the core never reads it), opens
//! one store per declared store from its URL ([`stores`]), builds each store's migration
//! catalog with the application's own migrations, assembles the [`jadpo_engine::Engine`]
//! ([`Wiring`]), runs one pass of each scheduled job ([`passes`]), and sets up tracing.
//! Functions, the local process and the CLI all start here, so they agree on what each variable
//! means. Each audience's own part is a crate of its own, so a binary links only what it runs: the
//! commit HTTP surface is `jadpo-http`, the Lambda edge `jadpo-lambda`, and what only the local
//! process runs (the in-process queue, its loops, the sink) `jadpo-local`.

pub mod blobs;
pub mod config;
pub mod connections;
pub mod passes;
pub mod queue;
pub mod scratch;
pub mod shutdown;
pub mod stores;
pub mod telemetry;
pub mod wiring;

pub use config::{Config, ConfigError, DatabaseUrl, Mode, SqlitePath, StoreConfig};
pub use stores::{OpenSqlite, Stores, catalog_for, migrate_all, open_stores};
pub use wiring::{Wiring, WiringError};
