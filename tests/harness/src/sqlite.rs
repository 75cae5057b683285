//! SQLite databases for tests: a file in a temporary folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use jadpo_core::SystemClock;
use jadpo_engine::migrate;
use jadpo_store_sqlite::{Sqlite, SqliteLocation, SqliteOptions, SqliteStore};

/// A test's own SQLite file, deleted when this value is dropped.
pub struct SqliteTestDb {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl SqliteTestDb {
    /// An empty database file (not created until a store opens it).
    pub fn empty() -> Self {
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(e) => panic!("cannot create a temporary folder for an SQLite test database: {e}"),
        };
        let path = dir.path().join("main.db");
        Self { _dir: dir, path }
    }

    /// A database with the built-in migrations applied.
    pub async fn migrated() -> Self {
        let db = Self::empty();
        let store = db.store();
        if let Err(e) =
            migrate::apply(&store, &jadpo_store_sqlite::migrate::builtin_catalog()).await
        {
            panic!("migrating the SQLite test database failed: {e}");
        }
        db
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The URL the runtime's configuration takes for this file.
    pub fn url(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }

    /// A new store on this file, named `main`.
    pub fn store(&self) -> SqliteStore {
        Self::open(&self.path)
    }

    /// A store named `main` on another file of the test's (a backup, say).
    pub fn open(path: &Path) -> SqliteStore {
        let location = SqliteLocation::File(path.to_path_buf());
        match Sqlite::open("main", &location, &SqliteOptions::default(), Arc::new(SystemClock)) {
            Ok(store) => store,
            Err(e) => panic!("cannot open the SQLite test database {}: {e}", path.display()),
        }
    }
}
