//! `jadpo-core`: the part of Jadpo every function shares.
//!
//! It holds the domain types, the *ports* the runtime talks through (the store traits grouped by
//! role, the queue trait, the [`Clock`]) and the pure logic that decides things (which migrations
//! to apply, whether an applied one was edited). It never names a driver type and never reads the
//! environment: adapters (`jadpo-store-postgres`, `jadpo-store-sqlite`, later `jadpo-queue-sqs`)
//! implement the ports, and `jadpo-runtime` wires them from configuration.
//!
//! The seam every later capability depends on is [`store::Transaction`]: an action's own writes
//! and the runtime's rows (outbox, deliveries, idempotency record) go through the same handle and
//! therefore commit together or not at all.

pub mod alert;
pub mod app;
pub mod audit;
pub mod auth;
pub mod breaker;
pub mod clock;
pub mod connect;
pub mod error;
pub mod event;
pub mod flags;
pub mod housekeeping;
pub mod id;
pub mod lease;
pub mod migrate;
pub mod operator;
pub mod pipeline;
pub mod queue;
pub mod schedule;
pub mod schema;
pub mod sql;
pub mod store;
pub mod transaction;
pub mod workflow;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{StoreError, StoreErrorKind};
pub use sql::{Dialect, Row, SqlValue};
pub use store::Store;
pub use transaction::{Transaction, TransactionalStore, commit_or_rollback};
