//! [`Store`]: every store role together, what the runtime holds one `Arc<dyn Store>` of per
//! declared store. The roles:
//!
//! * [`crate::transaction::TransactionalStore`] opens a transaction and runs single statements;
//! * [`crate::ports::MigrationStore`] applies and lists migrations under the two ledgers.
//! * [`crate::ports::SchemaIntrospection`] describes tables, for `jadpo check` and conformance.
//! * [`crate::ports::ServiceKeyStore`] keeps service keys' verifiers.
//! * [`crate::ports::UserSessionStore`] keeps users' API tokens' and browser sessions' verifiers;
//!   [`crate::ports::SignInStore`] keeps sign-in requests (magic links and codes by email);
//!   [`crate::ports::PasskeyStore`] keeps passkeys and the ceremonies under way.
//! * [`crate::ports::StepStore`] keeps the step records of runs that make changing calls.
//! * [`crate::ports::LeaseStore`] takes, extends and fences generation-numbered leases.
//! * [`crate::ports::KeyedStateStore`] keeps the built-in services' keyed state, claimed under
//!   such a lease and written by a fenced compare-and-set.
//! * [`crate::ports::WorkflowStore`] commits workflow transitions and keeps Sessions;
//!   [`crate::ports::WorkflowOps`] verifies, exports and imports them.
//! * [`crate::ports::PipelineStore`] keeps the outbox, deliveries, handled records and
//!   idempotency keys.
//! * [`crate::ports::WebhookStore`] keeps webhook receipts, one per source and event key.
//! * [`crate::ports::FileStore`] keeps how many fields hold each stored file, and the triggers
//!   that keep it.
//!
//! A use case that needs one role takes that role alone (`store: &dyn PipelineStore`), so what it
//! may touch is in its signature; a `&dyn Store` coerces to it (trait upcasting, Rust 1.86).
//!
//! A new capability adds its role trait in its own module and one line here.

use crate::ports::AuditStore;
use crate::ports::BreakerStore;
use crate::ports::FileStore;
use crate::ports::FlagStore;
use crate::ports::HousekeepingStore;
use crate::ports::KeyedStateStore;
use crate::ports::LeaseStore;
use crate::ports::MigrationStore;
use crate::ports::PasskeyStore;
use crate::ports::ScheduleStore;
use crate::ports::SchemaIntrospection;
use crate::ports::ServiceKeyStore;
use crate::ports::SignInStore;
use crate::ports::StepStore;
use crate::ports::UserSessionStore;
use crate::ports::WebhookStore;
use crate::ports::{DeliveryAdminStore, PipelineStore};
use crate::ports::{WorkflowOps, WorkflowStore};
use crate::transaction::TransactionalStore;

/// A store: every role together.
pub trait Store:
    TransactionalStore
    + MigrationStore
    + SchemaIntrospection
    + PipelineStore
    + ServiceKeyStore
    + UserSessionStore
    + SignInStore
    + PasskeyStore
    + StepStore
    + WorkflowStore
    + WorkflowOps
    + LeaseStore
    + KeyedStateStore
    + ScheduleStore
    + HousekeepingStore
    + DeliveryAdminStore
    + BreakerStore
    + FlagStore
    + AuditStore
    + FileStore
    + WebhookStore
{
}

impl<T> Store for T where
    T: TransactionalStore
        + MigrationStore
        + SchemaIntrospection
        + PipelineStore
        + ServiceKeyStore
        + UserSessionStore
        + SignInStore
        + PasskeyStore
        + StepStore
        + WorkflowStore
        + WorkflowOps
        + LeaseStore
        + KeyedStateStore
        + ScheduleStore
        + HousekeepingStore
        + DeliveryAdminStore
        + BreakerStore
        + FlagStore
        + AuditStore
        + FileStore
        + WebhookStore
{
}
