//! One PostgreSQL database per test, on whichever server [`crate::cluster`] found.

use std::time::Duration;

use jadpo_engine::migrate;
use jadpo_schema::migrate::MigrationCatalog;
use jadpo_store_postgres::{PgOptions, PgStore, PgTx, Postgres};
use tokio_postgres::NoTls;

use crate::cluster::{Server, server};

/// A test's own database, dropped (with any connections still open) when this value is dropped.
pub struct PgTestDb {
    admin_url: String,
    name: String,
    url: String,
}

impl PgTestDb {
    /// A new empty database.
    pub async fn empty() -> Self {
        let server = server().await;
        let name = unique_name("jadpo_test");
        admin(server, &format!("CREATE DATABASE {name}")).await;
        Self::on(server, name)
    }

    /// A new database cloned from a template with the built-in migrations applied.
    pub async fn migrated() -> Self {
        let server = server().await;
        let template = template(server).await;
        let name = unique_name("jadpo_test");
        for attempt in 0.. {
            match try_admin(server, &format!("CREATE DATABASE {name} TEMPLATE {template}")).await {
                Ok(()) => break,
                // The template's last connection may still be closing: wait and retry.
                Err(e) if e.contains("being accessed by other users") && attempt < 50 => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("cannot clone the migrated template {template}: {e}"),
            }
        }
        Self::on(server, name)
    }

    fn on(server: &Server, name: String) -> Self {
        Self { admin_url: server.admin_url.clone(), url: server.url_for(&name), name }
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new store on this database, named `main`, with the default pool.
    pub fn store(&self) -> PgStore {
        match Postgres::connect("main", &self.url, &PgOptions::default()) {
            Ok(store) => store,
            Err(e) => panic!("cannot connect to the test database {}: {e}", self.name),
        }
    }

    /// Runs `script` (with its own `BEGIN`/`COMMIT`, as `psql -f` would) on this database.
    pub async fn run_script(&self, script: &str) {
        use jadpo_core::TransactionalStore;
        let store = self.store();
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        let pg = tx.driver().downcast_mut::<PgTx>().unwrap_or_else(|| panic!("not a PgTx"));
        let client = pg.client().await.unwrap_or_else(|e| panic!("{e}"));
        // The script has its own BEGIN/COMMIT: run it outside ours.
        client.batch_execute("COMMIT").await.unwrap_or_else(|e| panic!("{e}"));
        client.batch_execute(script).await.unwrap_or_else(|e| panic!("script: {e}"));
        client.batch_execute("BEGIN").await.unwrap_or_else(|e| panic!("{e}"));
        tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    }
}

impl Drop for PgTestDb {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let admin_url = self.admin_url.clone();
        // Drop may run inside a runtime that is shutting down: use a thread with its own.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
            rt.map_err(|e| e.to_string()).and_then(|rt| rt.block_on(run_admin(&admin_url, &sql)))
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("warning: could not drop test database {}: {e}", self.name);
        }
    }
}

fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

async fn run_admin(admin_url: &str, sql: &str) -> Result<(), String> {
    let (client, connection) =
        tokio_postgres::connect(admin_url, NoTls).await.map_err(|e| e.to_string())?;
    let task = tokio::spawn(connection);
    let result = client
        .batch_execute(sql)
        .await
        .map_err(|e| e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_owned()));
    drop(client);
    let _ = task.await;
    result
}

async fn try_admin(server: &Server, sql: &str) -> Result<(), String> {
    run_admin(&server.admin_url, sql).await
}

async fn admin(server: &Server, sql: &str) {
    if let Err(e) = try_admin(server, sql).await {
        panic!("test database setup failed on {}: {sql}: {e}", server.describe);
    }
}

/// The migrated template for this build's catalog, created once per schema version: named by
/// the catalog's checksums, built under a temporary name and renamed when complete, so
/// concurrent test processes never clone a half-migrated template.
async fn template(server: &Server) -> String {
    let catalog = jadpo_store_postgres::builtin_catalog();
    let name = format!("jadpo_tpl_{}", catalog_digest(&catalog));
    if admin_query_has_rows(server, "SELECT 1 FROM pg_database WHERE datname = $1", &name).await {
        return name;
    }
    let building = unique_name("jadpo_tplbuild");
    admin(server, &format!("CREATE DATABASE {building}")).await;
    {
        let store =
            match Postgres::connect("main", &server.url_for(&building), &PgOptions::default()) {
                Ok(store) => store,
                Err(e) => panic!("cannot connect to the template being built: {e}"),
            };
        if let Err(e) = migrate::apply(&store, &catalog).await {
            panic!("migrating the test template failed: {e}");
        }
    }
    let renamed = rename_when_idle(server, &building, &name).await;
    if !renamed {
        // Another process finished first; ours is surplus.
        let _ =
            try_admin(server, &format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)")).await;
    }
    name
}

async fn rename_when_idle(server: &Server, from: &str, to: &str) -> bool {
    for _ in 0..100 {
        match try_admin(server, &format!("ALTER DATABASE {from} RENAME TO {to}")).await {
            Ok(()) => return true,
            Err(e) if e.contains("already exists") => return false,
            Err(e) if e.contains("being accessed by other users") => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("cannot publish the test template {to}: {e}"),
        }
    }
    panic!("the test template {from} stayed busy; cannot publish it");
}

async fn admin_query_has_rows(server: &Server, sql: &str, param: &str) -> bool {
    let connected = tokio_postgres::connect(&server.admin_url, NoTls).await;
    let (client, connection) = match connected {
        Ok(pair) => pair,
        Err(e) => panic!("cannot connect to {}: {e}", server.describe),
    };
    let task = tokio::spawn(connection);
    let rows = client.query(sql, &[&param]).await;
    drop(client);
    let _ = task.await;
    match rows {
        Ok(rows) => !rows.is_empty(),
        Err(e) => panic!("test harness query failed on {}: {e}", server.describe),
    }
}

fn catalog_digest(catalog: &MigrationCatalog) -> String {
    let joined: String = catalog.all().map(|m| m.checksum()).collect();
    let digest = jadpo_schema::migrate::Migration::new(
        jadpo_schema::migrate::Ledger::Jadpo,
        1,
        "digest",
        &joined,
    )
    .checksum();
    digest[..16].to_owned()
}
