//! The event pipeline's rows and roles: the outbox, deliveries, handled records and idempotency
//! keys ([`PipelineStore`]), and operators' changes to deliveries ([`DeliveryAdminStore`]).
//!
//! The rows themselves are written by each adapter's statements; the decisions (commit, relay,
//! deliver) are made once, in `jadpo-engine`, for both adapters.

mod admin;
mod sql;
mod types;

pub use admin::{DeliveryAdminDialect, DeliveryAdminSql, DeliveryAdminStore};
pub use sql::{PipelineDialect, PipelineSql};
pub use types::*;
