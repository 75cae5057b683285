//! [`Store`]: every store role together, what the runtime holds one `Arc<dyn Store>` of per
//! declared store. The roles:
//!
//! * [`crate::transaction::TransactionalStore`] opens a transaction and runs single statements;
//! * [`crate::migrate::MigrationStore`] applies and lists migrations under the two ledgers.
//! * [`crate::schema::SchemaIntrospection`] describes tables, for `jadpo check` and conformance.
//! * [`crate::auth::ServiceKeyStore`] keeps service keys' verifiers.
//! * [`crate::lease::LeaseStore`] takes, extends and fences generation-numbered leases.
//! * [`crate::workflow::WorkflowStore`] commits workflow transitions and keeps Sessions;
//!   [`crate::workflow::WorkflowOps`] verifies, exports and imports them.
//! * [`crate::pipeline::PipelineStore`] keeps the outbox, deliveries, handled records and
//!   idempotency keys.
//!
//!
//! A new capability adds its role trait in its own module and one line here.

use crate::audit::AuditStore;
use crate::auth::ServiceKeyStore;
use crate::breaker::BreakerStore;
use crate::flags::FlagStore;
use crate::housekeeping::HousekeepingStore;
use crate::lease::LeaseStore;
use crate::migrate::MigrationStore;
use crate::pipeline::{DeliveryAdminStore, PipelineStore};
use crate::schedule::ScheduleStore;
use crate::schema::SchemaIntrospection;
use crate::transaction::TransactionalStore;
use crate::workflow::{WorkflowOps, WorkflowStore};

/// A store: every role together.
pub trait Store:
    TransactionalStore
    + MigrationStore
    + SchemaIntrospection
    + PipelineStore
    + ServiceKeyStore
    + WorkflowStore
    + WorkflowOps
    + LeaseStore
    + ScheduleStore
    + HousekeepingStore
    + DeliveryAdminStore
    + BreakerStore
    + FlagStore
    + AuditStore
{
}

impl<T> Store for T where
    T: TransactionalStore
        + MigrationStore
        + SchemaIntrospection
        + PipelineStore
        + ServiceKeyStore
        + WorkflowStore
        + WorkflowOps
        + LeaseStore
        + ScheduleStore
        + HousekeepingStore
        + DeliveryAdminStore
        + BreakerStore
        + FlagStore
        + AuditStore
{
}
