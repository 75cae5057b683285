//! `jadpo-store-postgres`: the store contract on PostgreSQL, the deployed store.
//!
//! Built on `tokio-postgres` with a `deadpool` pool sized for Lambda: each process keeps a few
//! connections (default 4, [`PgOptions::pool_size`]), because hundreds of concurrent functions
//! each holding many connections exhaust a server (or an RDS Proxy) long before they exhaust CPU.
//! TLS goes through `rustls` only, when the URL asks for it (see [`tls`]).
//!
//! Driver types stay inside this crate; callers see [`jadpo_core`]'s ports, and reach the driver
//! only through [`PgTx`], the documented downcast target of `Transaction::driver`.

mod audit;
mod breaker;
mod delivery_admin;
mod error;
mod file_counts;
mod flags;
mod housekeeping;
mod keyed_state;
mod lease;
pub mod migrate;
mod passkeys;
mod pipeline;
pub mod roles;
mod schedule;
mod schema;
mod service_keys;
mod sign_in;
mod steps;
pub mod tls;
mod tx;
mod user_sessions;
mod webhooks;
mod workflow;

use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use jadpo_core::TransactionalStore;
use jadpo_core::{Dialect, Row, SqlValue, StoreError, Transaction};
use jadpo_store_sql::{SqlDialect, SqlStore};

pub use migrate::{builtin_catalog, schema_sql};
pub use tx::PgTx;

use crate::error::{DriverError, translate};

/// How to connect, beyond the URL.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most connections this process opens to the database (default 4).
    pub pool_size: usize,
    /// How long to wait for a new connection to be established (default 5 s).
    pub connect_timeout: Duration,
    /// How long to wait for a free pooled connection before failing as unavailable (default 10 s).
    pub acquire_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            pool_size: 4,
            connect_timeout: Duration::from_secs(5),
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

/// Every store role on PostgreSQL: the shared roles over this adapter's connection.
pub type PgStore = SqlStore<Postgres>;

/// This adapter's statements for every role.
pub static DIALECT: SqlDialect = SqlDialect {
    pipeline: &pipeline::SQL,
    delivery_admin: &delivery_admin::ADMIN,
    service_keys: &service_keys::SERVICE_KEYS,
    user_sessions: &user_sessions::USER_SESSIONS,
    sign_in: &sign_in::SIGN_IN,
    passkeys: &passkeys::PASSKEYS,
    steps: &steps::STEPS,
    leases: lease::leases,
    keyed_state: &keyed_state::KEYED_STATE,
    webhooks: &webhooks::WEBHOOKS,
    schedule: &schedule::SCHEDULES,
    housekeeping: &housekeeping::HOUSEKEEPING,
    breaker: &breaker::BREAKERS,
    flags: &flags::FLAGS,
    audit: &audit::AUDIT,
    audit_generated: audit::GENERATED,
    files: &file_counts::FILES,
    files_generated: file_counts::GENERATED,
    workflow: &workflow::SQL,
    execution: workflow::EXECUTION,
};

/// The store contract on one PostgreSQL database.
#[derive(Clone)]
pub struct Postgres {
    name: String,
    pool: Pool,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Postgres {
    /// A store for `url` (`postgres://user:pass@host:port/db?sslmode=...`). Connections are made
    /// lazily, on first use; call [`TransactionalStore::ping`] to check the database answers.
    pub fn connect(name: &str, url: &str, options: &PgOptions) -> Result<PgStore, StoreError> {
        let target = tls::parse_url(url)?;
        let mut config = target.config;
        config.connect_timeout(options.connect_timeout);
        let manager_config = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = match target.tls {
            Some(tls) => Manager::from_config(config, tls, manager_config),
            None => Manager::from_config(config, tokio_postgres::NoTls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .wait_timeout(Some(options.acquire_timeout))
            .create_timeout(Some(options.connect_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::invalid(format!("cannot build the connection pool: {e}")))?;
        Ok(SqlStore::new(Self { name: name.to_owned(), pool }, &DIALECT))
    }

    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|e| translate(DriverError::Pool(e)))
    }
}

#[async_trait]
impl TransactionalStore for Postgres {
    fn name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, StoreError> {
        Ok(Box::new(PgTx::begin(self.client().await?)))
    }

    async fn query_once(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        let client = self.client().await?;
        tx::query(&client, sql, params).await
    }

    async fn execute_once(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        let client = self.client().await?;
        tx::execute(&client, sql, params).await
    }
}
