//! `jadpo flags list | set | history`: each change recorded in `jadpo_flag_changes` in the same
//! transaction, with the state before and after, the operator's name and the database role.

use std::sync::Arc;

use jadpo_core::commit_or_rollback;
use jadpo_core::id::new_id;
use jadpo_core::model::flags::{FlagChange, Rollout, StoredFlag};
use jadpo_core::{Store, StoreError};

use crate::context::Engine;

/// Why a flag operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum FlagOpError {
    /// The application declares no such flag.
    #[error("no flag named {name:?} is declared (flags: {declared})")]
    Unknown {
        /// The name.
        name: String,
        /// The declared flags.
        declared: String,
    },
    /// The operator's name is empty.
    #[error("the operator's name is empty: pass --operator NAME")]
    NoOperator,
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Operator verbs over flags.
pub struct FlagOps<'a> {
    p: &'a Engine,
    operator: &'a str,
}

impl<'a> FlagOps<'a> {
    /// Verbs acting as `operator`.
    pub fn new(p: &'a Engine, operator: &'a str) -> Result<Self, FlagOpError> {
        if operator.trim().is_empty() {
            return Err(FlagOpError::NoOperator);
        }
        Ok(Self { p, operator })
    }

    fn store(&self) -> Result<Arc<dyn Store>, FlagOpError> {
        Ok(Arc::clone(self.p.store(self.p.app.flags_store())?))
    }

    fn declared(&self, name: &str) -> Result<Rollout, FlagOpError> {
        self.p.app.flag_default(name).ok_or_else(|| FlagOpError::Unknown {
            name: name.to_owned(),
            declared: self.p.app.flags().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "),
        })
    }

    /// Sets `name` to `rollout`, recording the change; setting the state it already has records
    /// nothing and returns `None`.
    pub async fn set(
        &self,
        name: &str,
        rollout: Rollout,
    ) -> Result<Option<FlagChange>, FlagOpError> {
        let default = self.declared(name)?;
        let store = self.store()?;
        let now = self.p.clock.now();
        let mut tx = store.begin().await?;
        let result = async {
            let before = store.flag_read(tx.as_mut(), name).await?.map_or(default, |f| f.rollout);
            if before == rollout {
                return Ok(None);
            }
            let change = FlagChange {
                id: new_id(self.p.clock.as_ref()).to_string(),
                flag: name.to_owned(),
                changed_at: now,
                before: before.describe(),
                after: rollout.describe(),
                operator: self.operator.to_owned(),
                db_role: store.db_role(tx.as_mut()).await?,
            };
            store.flag_write(tx.as_mut(), name, rollout, now, self.operator).await?;
            store.flag_change_insert(tx.as_mut(), &change).await?;
            Ok::<_, StoreError>(Some(change))
        }
        .await
        .map_err(FlagOpError::from);
        commit_or_rollback(tx, result).await
    }

    /// Every declared flag with its state (the declared default when never set), and stored
    /// flags no longer declared.
    pub async fn list(&self) -> Result<Vec<(String, Rollout, Option<StoredFlag>)>, FlagOpError> {
        let stored = self.store()?.flags_list().await?;
        let mut out: Vec<_> = self
            .p
            .app
            .flags()
            .map(|(name, default)| {
                let s = stored.iter().find(|f| &f.name == name).cloned();
                (name.clone(), s.as_ref().map_or(*default, |f| f.rollout), s)
            })
            .collect();
        for s in stored.into_iter().filter(|s| self.p.app.flag_default(&s.name).is_none()) {
            out.push((s.name.clone(), s.rollout, Some(s)));
        }
        Ok(out)
    }

    /// `name`'s changes, newest first.
    pub async fn history(&self, name: &str, limit: u32) -> Result<Vec<FlagChange>, FlagOpError> {
        Ok(self.store()?.flag_changes(name, limit).await?)
    }
}
