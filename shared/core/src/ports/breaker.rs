//! The breaker role: a connection's breaker row, read and written under a lock, deliveries held
//! and released, and the `breaker.open` alert.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::alert::Alert;
use crate::model::breaker::Breaker;
use crate::transaction::Transaction;

/// The breaker role.
#[async_trait]
pub trait BreakerStore: Send + Sync {
    /// `connection`'s breaker (created closed if missing), locked inside `tx`.
    async fn breaker_lock(
        &self,
        tx: &mut dyn Transaction,
        connection: &str,
        now: DateTime<Utc>,
    ) -> Result<Breaker, StoreError>;
    /// `connection`'s breaker as it stands (`None`: never created), read without a lock: for the
    /// closed breaker's fast path, where nothing is to change.
    async fn breaker_get(&self, connection: &str) -> Result<Option<Breaker>, StoreError>;
    /// Writes the whole breaker row.
    async fn breaker_write(
        &self,
        tx: &mut dyn Transaction,
        breaker: &Breaker,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Holds pending delivery `id` for `connection` until `until`.
    async fn delivery_hold(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        connection: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Marks delivery `id` as no longer held (it goes as the probe).
    async fn delivery_unhold(&self, tx: &mut dyn Transaction, id: &str) -> Result<(), StoreError>;
    /// Releases `connection`'s held deliveries (due at `now`); the ids of those it released.
    async fn breaker_release_held(
        &self,
        tx: &mut dyn Transaction,
        connection: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;
    /// Every breaker in the store.
    async fn breakers_list(&self) -> Result<Vec<Breaker>, StoreError>;
    /// Raises up to `limit` `breaker.open` alerts.
    async fn breaker_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError>;
}
