//! `jadpo-core`: the bottom of Jadpo, what every other crate builds on. It never names a driver
//! type, never reads the environment and holds no use case (those are `jadpo-engine`'s); the
//! application API an application is written against sits above it, in `jadpo-application`.
//!
//! ```text
//! store        Store: every role together (one Arc<dyn Store> per declared store)
//!   │
//!   ▼
//! ports        one role trait a file (PipelineStore, LeaseStore, ...), the queue, connections
//!   │
//!   ▼
//! model        pure data and decisions: rows, leases, alerts, operator actions, the breaker's
//!   │          state machine, schedule timing, workflow definitions, kernel and state
//!   ▼
//! transaction  the seam: Transaction, TransactionalStore, commit_or_rollback
//! sql, error   values that cross the seam (SqlValue, Row, Dialect) and StoreError
//! clock, id    injected time (Clock) and time-ordered ids
//! ```
//!
//! A module imports only from its own layer or below (`make lint` checks it, and that no two
//! modules import each other). The seam every capability depends on is [`Transaction`]: an
//! action's own writes and the runtime's rows (outbox, deliveries, idempotency record) go through
//! the same handle and therefore commit together or not at all.

pub mod clock;
pub mod error;
pub mod id;
pub mod model;
pub mod ports;
pub mod sql;
pub mod store;
pub mod transaction;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{StoreError, StoreErrorKind};
pub use sql::{Dialect, Row, SqlValue};
pub use store::Store;
pub use transaction::{On, Transaction, TransactionalStore, commit_or_rollback};
