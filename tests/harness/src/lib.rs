//! `jadpo-test-harness`: real databases for every crate's tests.
//!
//! PostgreSQL comes from, in order of preference:
//!
//! 1. `DATABASE_URL` (any server the tests may create databases on);
//! 2. testcontainers, when a Docker engine answers;
//! 3. a throwaway cluster started from the local PostgreSQL binaries (`initdb`, `pg_ctl`; run as
//!    the `postgres` user when the tests run as root), stopped and deleted by a watchdog when
//!    the test process exits, however it exits;
//!
//! else the test fails with a message naming the three ways. Each test gets its own database
//! ([`PgTestDb`]), empty or cloned from a template migrated with the built-in migrations, and
//! dropped when the test ends, so tests run in parallel and leave nothing behind but the
//! template (one per schema version, reused by later runs).
//!
//! SQLite databases ([`SqliteTestDb`]) are files in a temporary folder deleted with it.

mod cluster;
mod history;
mod http;
mod moto;
mod net;
mod postgres;
mod restart;
mod soak;
mod sqlite;
mod tls;
mod webdriver;

pub use history::lift_history_guard;
pub use http::{HttpAnswer, http_request};
pub use moto::MotoServer;
pub use net::{free_port, wait_for_port};
pub use postgres::PgTestDb;
pub use restart::PgCluster;
pub use soak::{sized, soak};
pub use sqlite::SqliteTestDb;
pub use tls::PgTlsServer;
pub use webdriver::Browser;
