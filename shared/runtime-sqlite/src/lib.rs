//! `jadpo-runtime-sqlite`: what the binaries that link SQLite (`jadpo-local`, the `jadpo` CLI)
//! add to `jadpo-runtime`: [`open`], given to `Wiring::new` so that `sqlite://` stores open,
//! a [`scratch`] in-memory store for `jadpo snapshot` and `jadpo check`, [`files`] for
//! `jadpo backup` and `jadpo restore`, and [`take_over_step_leases`] for `jadpo-local`'s start.
//!
//! Why a crate and not a feature of `jadpo-runtime`: cargo unifies a crate's features across a
//! build, so with a feature every function binary that a workspace build (the tests') makes would
//! link SQLite, unlike the binaries that ship. With this crate the deployed functions never
//! depend on SQLite in any build, and the end-to-end tests run the very binaries that ship.

use std::sync::Arc;

use jadpo_application::{Application, Feature};
use jadpo_core::{Clock, Store, StoreError, SystemClock};
use jadpo_runtime::scratch::Scratch;
use jadpo_runtime::{Config, DatabaseUrl, SqlitePath, Stores};
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

/// Why the step leases of a stopped process could not be taken over.
#[derive(Debug, thiserror::Error)]
pub enum TakeOverError {
    #[error("the lock beside {path}: {source}")]
    Lock { path: String, source: files::FilesError },
    #[error("store {0:?} is configured but not open")]
    NotOpen(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// For each SQLite file store holding step records that this process is provably alone on (it
/// holds the file's sole lock, which a crashed predecessor's death released), ends every step
/// lease left: a runner that held one is dead, so its runs are taken up at once instead of after
/// their lease (two minutes by default). A PostgreSQL store, or a file another live process
/// holds, keeps its leases: they are waited out, as deployed. Returns the locks, to hold while
/// the process lives.
pub async fn take_over_step_leases(
    app: &Application,
    config: &Config,
    stores: &Stores,
    clock: &dyn Clock,
) -> Result<Vec<files::SoleLock>, TakeOverError> {
    let mut held = Vec::new();
    let with_steps = app.feature_stores(Feature::StepRecords);
    for store in &config.stores {
        // A store no calling handler writes keeps no step records, so no leases.
        if !with_steps.contains(&store.name.as_str()) {
            continue;
        }
        let DatabaseUrl::Sqlite(SqlitePath::File(path)) = &store.url else {
            continue;
        };
        let lock = files::sole_lock(path)
            .map_err(|source| TakeOverError::Lock { path: path.display().to_string(), source })?;
        let Some(lock) = lock else {
            tracing::warn!(store = %store.name, "another process holds these files: its step leases are waited out");
            continue;
        };
        let opened =
            stores.get(&store.name).ok_or_else(|| TakeOverError::NotOpen(store.name.clone()))?;
        let ended = opened.step_leases_release_all(clock.now()).await?;
        if ended > 0 {
            tracing::info!(store = %store.name, ended, "step leases of a stopped process taken over");
        }
        held.push(lock);
    }
    Ok(held)
}
