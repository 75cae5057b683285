//! The runtime context every use case takes: the application, its open stores, the queue, the
//! clock, the connections and the limits.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use jadpo_application::{Application, FlagAccess};
use jadpo_core::clock::Clock;
use jadpo_core::ports::Connections;
use jadpo_core::ports::Queue;
use jadpo_core::{Store, StoreError};

use crate::settings::EngineSettings;

/// Everything the use cases need: the application, its open stores, the queue and the clock.
#[derive(Clone)]
pub struct Engine {
    /// The application.
    pub app: Arc<Application>,
    /// The open stores by declared name.
    pub stores: BTreeMap<String, Arc<dyn Store>>,
    /// Where deliveries travel.
    pub queue: Arc<dyn Queue>,
    pub clock: Arc<dyn Clock>,
    /// The external services handlers call.
    pub connections: Arc<dyn Connections>,
    /// Limits.
    pub settings: EngineSettings,
    /// What runs with changing calls need: sealing keys, build, deadline.
    pub runs: crate::settings::RunEnv,
    /// Where stored files' bytes live (`None`: the application declares no file field).
    pub blobs: Option<Arc<dyn jadpo_core::ports::Blobs>>,
    /// The breakers this process last saw closed, trusted for `settings.breaker_trusted_for`.
    pub breakers_seen: Arc<crate::breaker::ClosedSeen>,
    /// The OpenID Connect issuers' key sets this process fetched ([`crate::key_sets::KeySets`]).
    pub key_sets: Arc<crate::key_sets::KeySets>,
}

impl Engine {
    /// How a handler writing `store` reads flags.
    pub(crate) fn flag_access(&self, store: &str) -> Option<FlagAccess<'_>> {
        let flags_store = self.app.flags_store();
        self.stores.get(flags_store).map(|s| FlagAccess {
            app: self.app.as_ref(),
            store: s.as_ref(),
            same_store: flags_store == store,
        })
    }

    /// How a handler writing `store` (opened as `opened`) checks the files a request names:
    /// through that store's file counts, when the application keeps files there.
    pub(crate) fn file_access<'a>(
        &self,
        store: &str,
        opened: &'a dyn jadpo_core::Store,
    ) -> Option<&'a dyn jadpo_core::ports::FileStore> {
        self.app.keeps_files(store).then_some(opened as &dyn jadpo_core::ports::FileStore)
    }

    /// This engine for one invocation that must return by `deadline` (a Lambda context's): its
    /// runs hold their step records until then at most and start no call they could not finish.
    /// A deadline already past is none the Lambda service gave (an emulator's placeholder): the
    /// engine runs as without one.
    pub fn until(&self, deadline: Option<DateTime<Utc>>) -> Self {
        let mut engine = self.clone();
        engine.runs.deadline = deadline.filter(|d| *d > self.clock.now());
        engine
    }

    /// Whether the invocation's deadline is within the margin kept to record an outcome: work
    /// not started by then is left for the queue to send again, with no attempt counted.
    pub fn near_deadline(&self) -> bool {
        let margin = self.settings.steps.deadline_margin;
        self.runs.deadline.is_some_and(|d| jadpo_core::clock::after(self.clock.now(), margin) > d)
    }

    /// The store called `name`, or an error naming it.
    pub fn store(&self, name: &str) -> Result<&Arc<dyn Store>, StoreError> {
        self.stores.get(name).ok_or_else(|| {
            StoreError::internal(format!("store {name:?} is declared but not configured"))
        })
    }
}
