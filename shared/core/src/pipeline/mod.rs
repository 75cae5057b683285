//! The event pipeline: commit, relay, delivery.
//!
//! * [`commit`] runs an action in one transaction on its store, adding the outbox row of each
//!   event it emitted, one delivery row per subscriber, and the idempotency record.
//! * [`relay`] puts due deliveries on the queue: never sent, sent and lost, or due for retry.
//! * [`deliver`] handles one queue message: runs the subscriber in a transaction on the
//!   subscriber's store that also inserts its handled-delivery record, then records the outcome.
//!
//! The rows themselves are written by each adapter's [`PipelineStore`] role (its own SQL); the
//! decisions are made here, once, for both adapters.

mod commit;
mod deliver;
mod ops;
mod relay;
mod sql;
mod types;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub use commit::{CommitError, CommitOutcome, CommitRequest, commit, request_digest};
pub(crate) use commit::{Origin, write_emitted};
pub use deliver::{DeliverError, DeliveryResult, deliver};
pub use ops::{
    DeliveryAdminDialect, DeliveryAdminSql, DeliveryAdminStore, DeliveryOpError, DeliveryOps,
};
pub use relay::{RelayReport, enqueue_now, relay};
pub use sql::{PipelineDialect, PipelineSql};
pub use types::*;

use crate::app::Application;
use crate::clock::Clock;
use crate::connect::Connections;
use crate::queue::Queue;
use crate::store::Store;

/// Limits of the pipeline, validated by the runtime's configuration.
#[derive(Debug, Clone, Copy)]
pub struct PipelineSettings {
    /// Deepest chain of events a subscriber may extend (0 is an event emitted by a request).
    pub max_chain_depth: u32,
    /// How long an idempotency key's stored response is replayed.
    pub idempotency_retention: Duration,
    /// How long after a delivery was put on the queue the relay assumes the message was lost
    /// and sends it again (longer than the queue's visibility timeout times its receive count).
    pub redelivery_after: Duration,
    /// Deliveries claimed per relay batch.
    pub relay_batch: usize,
    /// Tick passes.
    pub schedules: crate::schedule::ScheduleSettings,
    /// Housekeeping passes.
    pub housekeeping: crate::housekeeping::HousekeepingSettings,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        Self {
            max_chain_depth: 8,
            idempotency_retention: Duration::from_secs(24 * 3600),
            redelivery_after: Duration::from_secs(15 * 60),
            relay_batch: 100,
            schedules: crate::schedule::ScheduleSettings::default(),
            housekeeping: crate::housekeeping::HousekeepingSettings::default(),
        }
    }
}

/// Everything the use cases need: the application, its open stores, the queue and the clock.
#[derive(Clone)]
pub struct Pipeline {
    /// The application.
    pub app: Arc<Application>,
    /// The open stores by declared name.
    pub stores: BTreeMap<String, Arc<dyn Store>>,
    /// Where deliveries travel.
    pub queue: Arc<dyn Queue>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The external services handlers call.
    pub connections: Arc<dyn Connections>,
    /// Limits.
    pub settings: PipelineSettings,
}

impl Pipeline {
    /// How a handler writing `store` reads flags.
    pub(crate) fn flag_access(&self, store: &str) -> Option<crate::app::FlagAccess<'_>> {
        let flags_store = self.app.flags_store();
        self.stores.get(flags_store).map(|s| crate::app::FlagAccess {
            app: self.app.as_ref(),
            store: s.as_ref(),
            same_store: flags_store == store,
        })
    }

    /// The store called `name`, or an error naming it.
    pub fn store(&self, name: &str) -> Result<&Arc<dyn Store>, crate::StoreError> {
        self.stores.get(name).ok_or_else(|| {
            crate::StoreError::internal(format!("store {name:?} is declared but not configured"))
        })
    }
}
