//! Opening the configured stores, and each store's migration catalog.

use std::collections::BTreeMap;
use std::sync::Arc;

use jadpo_application::Application;
use jadpo_core::{Clock, Store, StoreError};
use jadpo_schema::migrate::{MigrateError, MigrationCatalog};
use jadpo_store_postgres::Postgres;

use crate::config::{Config, DatabaseUrl, SqlitePath};

/// The open stores, by declared name, with the default store's name.
#[derive(Clone)]
pub struct Stores {
    by_name: BTreeMap<String, Arc<dyn Store>>,
    order: Vec<String>,
}

impl Stores {
    /// The store called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Store>> {
        self.by_name.get(name)
    }

    /// Every store, the default store first.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Arc<dyn Store>)> {
        self.order.iter().filter_map(|n| self.by_name.get(n).map(|s| (n.as_str(), s)))
    }
}

/// Opens every configured store (PostgreSQL pools connect lazily; SQLite files open now, through
/// `sqlite` when the binary links SQLite).
pub fn open_stores(
    config: &Config,
    clock: Arc<dyn Clock>,
    sqlite: Option<OpenSqlite>,
) -> Result<Stores, StoreError> {
    let mut by_name = BTreeMap::new();
    let mut order = Vec::new();
    for store in &config.stores {
        let opened: Arc<dyn Store> = match &store.url {
            DatabaseUrl::Postgres(url) => {
                log_transport(&store.name, url);
                Arc::new(Postgres::connect(&store.name, url, &config.postgres)?)
            }
            DatabaseUrl::Sqlite(path) => match sqlite {
                Some(open) => open(&store.name, path, config, &clock)?,
                None => return Err(no_sqlite(&store.name)),
            },
        };
        by_name.insert(store.name.clone(), opened);
        order.push(store.name.clone());
    }
    Ok(Stores { by_name, order })
}

/// Says at start how a PostgreSQL store is reached; loudly when the server is not verified.
fn log_transport(store: &str, url: &str) {
    let Ok(t) = jadpo_store_postgres::tls::transport(url) else { return };
    let verified = t.mode == jadpo_store_postgres::tls::SslMode::VerifyFull;
    if t.local || verified {
        tracing::info!(store, hosts = %t.hosts, sslmode = t.mode.name(), "PostgreSQL store");
    } else {
        tracing::warn!(
            store,
            hosts = %t.hosts,
            sslmode = t.mode.name(),
            "PostgreSQL store on another machine, its server NOT verified"
        );
    }
}

/// How a `sqlite://` store is opened. The binaries that link SQLite (the local process, the
/// CLI) give `jadpo_runtime_sqlite::open`; the deployed functions give none and never link it.
/// A separate crate rather than a feature of this one, so that a workspace build (the tests')
/// makes the same function binaries that ship.
pub type OpenSqlite =
    fn(&str, &SqlitePath, &Config, &Arc<dyn Clock>) -> Result<Arc<dyn Store>, StoreError>;

/// A binary built without SQLite (a deployed function): a `sqlite://` URL there is a
/// configuration mistake, refused before anything runs.
fn no_sqlite(name: &str) -> StoreError {
    StoreError::invalid(format!(
        "store {name:?} has a sqlite:// URL, but this binary is built without SQLite \
         (deployed functions use PostgreSQL): give it a postgres:// URL"
    ))
}

/// `store`'s built-in migrations followed by the application's own for that store and dialect,
/// running only the system tables of the features the declaration places in that store.
pub fn catalog_for(app: &Application, store: &dyn Store) -> Result<MigrationCatalog, MigrateError> {
    let own = app.migrations_for(store.name(), store.dialect());
    store
        .migration_catalog()
        .with_app_migrations(own)?
        .with_placement(app.store_features(store.name()))
}

impl Stores {
    /// The stores as the engine holds them.
    pub fn to_map(&self) -> BTreeMap<String, Arc<dyn Store>> {
        self.by_name.clone()
    }
}

/// Applies every pending migration to every store, then installs the triggers the declaration
/// puts there (audited entities, file fields) (the embedded mode does this on start).
pub async fn migrate_all(app: &Application, stores: &Stores) -> Result<(), MigrateError> {
    for (name, store) in stores.iter() {
        let catalog = catalog_for(app, store.as_ref())?;
        let report = jadpo_engine::migrate::apply(store.as_ref(), &catalog).await?;
        if !report.applied.is_empty() {
            tracing::info!(store = name, applied = report.applied.len(), "migrations applied");
        }
        jadpo_engine::migrate::install_triggers(store.as_ref(), app, name)
            .await
            .map_err(MigrateError::from)?;
    }
    Ok(())
}
