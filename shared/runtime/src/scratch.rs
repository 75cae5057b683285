//! Scratch stores: an empty database of a dialect to apply the migrations to and read back the
//! schema they make (`jadpo snapshot`, `jadpo check`), removed afterwards.
//!
//! SQLite's is a private in-memory database. PostgreSQL's is a new database
//! (`jadpo_scratch_<pid>_<nanos>`) made on a server the operator names, since the schema it
//! prints (types, defaults) is the server's own; [`Scratch::remove`] drops it, and a process
//! killed before that leaves one empty database behind, named so that it is recognisably
//! disposable.

use std::sync::Arc;

use jadpo_core::{Store, StoreError, TransactionalStore};
use jadpo_store_postgres::{PgOptions, Postgres};

/// An empty store to build a schema on.
pub struct Scratch {
    store: Arc<dyn Store>,
    /// For PostgreSQL: the server's URL and the database made on it.
    made: Option<(String, String)>,
}

impl Scratch {
    /// A scratch over `store`, which needs no removal (a private in-memory SQLite database:
    /// `jadpo_runtime_sqlite::scratch`).
    pub fn in_memory(store: Arc<dyn Store>) -> Self {
        Self { store, made: None }
    }

    /// A new database on the PostgreSQL server `server_url` reaches (its role may create
    /// databases), as store `store`.
    pub async fn postgres(server_url: &str, store: &str) -> Result<Self, StoreError> {
        let name = format!(
            "jadpo_scratch_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let url = database_url(server_url, &name)?;
        let admin = Postgres::connect("scratch-admin", server_url, &PgOptions::default())?;
        // An identifier, not a value: made here from digits and letters only.
        admin.execute_once(&format!("CREATE DATABASE {name}"), &[]).await.map_err(|e| {
            StoreError::new(
                e.kind(),
                format!(
                    "cannot make a scratch database on {}: {}",
                    redacted(server_url),
                    e.message()
                ),
            )
        })?;
        let opened = Postgres::connect(store, &url, &PgOptions::default())?;
        Ok(Self { store: Arc::new(opened), made: Some((server_url.to_owned(), name)) })
    }

    /// The scratch store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Drops the PostgreSQL database made for it (with its connections); nothing for SQLite.
    pub async fn remove(self) -> Result<(), StoreError> {
        let Self { store, made } = self;
        drop(store);
        let Some((server_url, name)) = made else { return Ok(()) };
        let admin = Postgres::connect("scratch-admin", &server_url, &PgOptions::default())?;
        admin.execute_once(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), &[]).await?;
        Ok(())
    }
}

/// `server_url` with its database replaced by `name`.
fn database_url(server_url: &str, name: &str) -> Result<String, StoreError> {
    let mut url = url::Url::parse(server_url).map_err(|e| {
        StoreError::invalid(format!("the scratch server's URL is not a postgres:// URL: {e}"))
    })?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(StoreError::invalid("the scratch server's URL must start with postgres://"));
    }
    url.set_path(&format!("/{name}"));
    Ok(url.to_string())
}

/// The URL without its password, for messages.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(the scratch server)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_database_replaces_the_urls_own_and_keeps_the_rest() {
        let url = database_url("postgres://u:p@h:5433/postgres?sslmode=disable", "jadpo_scratch_1");
        assert_eq!(
            url.ok().as_deref(),
            Some("postgres://u:p@h:5433/jadpo_scratch_1?sslmode=disable")
        );
        assert!(database_url("host=h dbname=x", "s").is_err());
        assert!(database_url("mysql://h/x", "s").is_err());
        assert_eq!(redacted("postgres://u:secret@h/db"), "postgres://u:***@h/db");
    }
}
