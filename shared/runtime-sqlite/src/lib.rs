//! `jadpo-runtime-sqlite`: what the binaries that link SQLite (`jadpo-local`, the `jadpo` CLI)
//! add to `jadpo-runtime`: [`open`], given to `Wiring::new` so that `sqlite://` stores open,
//! a [`scratch`] in-memory store for `jadpo snapshot` and `jadpo check`, and [`files`] for
//! `jadpo backup` and `jadpo restore`.
//!
//! Why a crate and not a feature of `jadpo-runtime`: cargo unifies a crate's features across a
//! build, so with a feature every function binary that a workspace build (the tests') makes would
//! link SQLite, unlike the binaries that ship. With this crate the deployed functions never
//! depend on SQLite in any build, and the end-to-end tests run the very binaries that ship.

use std::sync::Arc;

use jadpo_core::{Clock, Store, StoreError, SystemClock};
use jadpo_runtime::scratch::Scratch;
use jadpo_runtime::{Config, SqlitePath};
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions};

/// Backing up and restoring SQLite files (`jadpo backup`, `jadpo restore`).
pub use jadpo_store_sqlite::files;

/// Opens the `sqlite://` store `name` at `path` with the configuration's busy timeout and
/// create setting (a `jadpo_runtime::OpenSqlite`).
pub fn open(
    name: &str,
    path: &SqlitePath,
    config: &Config,
    clock: &Arc<dyn Clock>,
) -> Result<Arc<dyn Store>, StoreError> {
    let location = match path {
        SqlitePath::File(file) => SqliteLocation::File(file.clone()),
        SqlitePath::Memory => SqliteLocation::Memory,
    };
    let defaults = SqliteOptions::default();
    let options = SqliteOptions {
        busy_timeout: config.sqlite_busy_timeout.unwrap_or(defaults.busy_timeout),
        create: config.sqlite_create,
    };
    Ok(Arc::new(Sqlite::open(name, &location, &options, Arc::clone(clock))?))
}

/// A private in-memory SQLite database as store `store`, to build a schema on.
pub fn scratch(store: &str) -> Result<Scratch, StoreError> {
    let options = SqliteOptions::default();
    let opened = Sqlite::open(store, &SqliteLocation::Memory, &options, Arc::new(SystemClock))?;
    Ok(Scratch::in_memory(Arc::new(opened)))
}
