//! The store roles written once over the transaction seam: each role's statements as a table of
//! slots an adapter fills with its own SQL (`PipelineSql`, ...), and a blanket implementation of
//! the role for every adapter that supplies them (`PipelineDialect`, ...), so the two adapters can
//! differ in SQL but not in behaviour.

mod audit;
mod breaker;
mod delivery_admin;
mod flags;
mod housekeeping;
mod lease;
mod pipeline;
mod schedule;
mod service_keys;
mod workflow;
mod workflow_ops;

pub use audit::{AuditDialect, AuditSql};
pub use breaker::{BreakerDialect, BreakerSql};
pub use delivery_admin::{DeliveryAdminDialect, DeliveryAdminSql};
pub use flags::{FlagDialect, FlagSql};
pub use housekeeping::{HousekeepingDialect, HousekeepingSql};
pub use lease::{LeaseDialect, LeaseSql};
pub use pipeline::{PipelineDialect, PipelineSql};
pub use schedule::{ScheduleDialect, ScheduleSql};
pub use service_keys::{AuthDialect, AuthSql};
pub(crate) use workflow::ms;
pub use workflow::{WorkflowDialect, WorkflowSql, execution_params};
