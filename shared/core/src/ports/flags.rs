//! The flag role: a flag's stored state (inside a handler's transaction or on its own), and its
//! recorded changes.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::flags::StoredFlag;
use crate::model::flags::{FlagChange, Rollout};
use crate::transaction::{On, Transaction};

/// The flag role.
#[async_trait]
pub trait FlagStore: Send + Sync {
    /// Flag `name`, read where the caller chooses: an action reads it inside its own
    /// transaction when the flags live in the same store, on its own otherwise.
    async fn flag_read(&self, on: On<'_>, name: &str) -> Result<Option<StoredFlag>, StoreError>;
    /// Every stored flag.
    async fn flags_list(&self) -> Result<Vec<StoredFlag>, StoreError>;
    /// Sets flag `name` inside `tx`.
    async fn flag_write(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        rollout: Rollout,
        now: DateTime<Utc>,
        who: &str,
    ) -> Result<(), StoreError>;
    /// Records a change inside `tx`.
    async fn flag_change_insert(
        &self,
        tx: &mut dyn Transaction,
        change: &FlagChange,
    ) -> Result<(), StoreError>;
    /// Flag `name`'s changes, newest first.
    async fn flag_changes(&self, name: &str, limit: u32) -> Result<Vec<FlagChange>, StoreError>;
}
