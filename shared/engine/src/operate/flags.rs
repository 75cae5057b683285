//! `jadpo flags list | set | history`: each change recorded in `jadpo_flag_changes` in the same
//! transaction, with the state before and after, the operator's name and the database role.

use std::sync::Arc;

use jadpo_core::On;

use jadpo_core::id::new_id;
use jadpo_core::model::flags::{FlagChange, Rollout, StoredFlag};
use jadpo_core::{Store, StoreError};

use crate::context::Engine;
use crate::operate::{Change, Operator};

/// Why a flag operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum FlagOpError {
    /// The application declares no such flag.
    #[error("no flag named {name:?} is declared (flags: {declared})")]
    Unknown {
        name: String,
        /// The declared flags.
        declared: String,
    },
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Flags as operators see and change them.
pub struct FlagOps<'a> {
    engine: &'a Engine,
}

impl<'a> FlagOps<'a> {
    /// The flags of `engine`'s application.
    pub fn new(engine: &'a Engine) -> Self {
        Self { engine }
    }

    fn store(&self) -> Result<Arc<dyn Store>, FlagOpError> {
        Ok(Arc::clone(self.engine.store(self.engine.app.flags_store())?))
    }

    fn declared(&self, name: &str) -> Result<Rollout, FlagOpError> {
        self.engine.app.flag_default(name).ok_or_else(|| FlagOpError::Unknown {
            name: name.to_owned(),
            declared: self
                .engine
                .app
                .flags()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// Sets `name` to `rollout` as `operator`, recording the change; setting the state it
    /// already has records nothing and returns `None`.
    pub async fn set(
        &self,
        name: &str,
        rollout: Rollout,
        operator: &Operator,
    ) -> Result<Option<FlagChange>, FlagOpError> {
        let default = self.declared(name)?;
        let store = self.store()?;
        let mut change =
            Change::begin(store.as_ref(), operator, self.engine.clock.as_ref()).await?;
        let result = async {
            let before =
                store.flag_read(On::Tx(change.tx()), name).await?.map_or(default, |f| f.rollout);
            if before == rollout {
                return Ok(None);
            }
            let now = change.now();
            let record = FlagChange {
                id: new_id(self.engine.clock.as_ref()).to_string(),
                flag: name.to_owned(),
                changed_at: now,
                before: before.describe(),
                after: rollout.describe(),
                operator: operator.name().to_owned(),
                db_role: change.db_role().await?,
                os_account: operator.account().map(str::to_owned),
            };
            store.flag_write(change.tx(), name, rollout, now, operator.name()).await?;
            store.flag_change_insert(change.tx(), &record).await?;
            Ok::<_, StoreError>(Some(record))
        }
        .await
        .map_err(FlagOpError::from);
        change.finish(result).await
    }

    /// Every declared flag with its state (the declared default when never set), and stored
    /// flags no longer declared.
    pub async fn list(&self) -> Result<Vec<(String, Rollout, Option<StoredFlag>)>, FlagOpError> {
        let stored = self.store()?.flags_list().await?;
        let mut out: Vec<_> = self
            .engine
            .app
            .flags()
            .map(|(name, default)| {
                let s = stored.iter().find(|f| &f.name == name).cloned();
                (name.clone(), s.as_ref().map_or(*default, |f| f.rollout), s)
            })
            .collect();
        for s in stored.into_iter().filter(|s| self.engine.app.flag_default(&s.name).is_none()) {
            out.push((s.name.clone(), s.rollout, Some(s)));
        }
        Ok(out)
    }

    /// `name`'s changes, newest first.
    pub async fn history(&self, name: &str, limit: u32) -> Result<Vec<FlagChange>, FlagOpError> {
        Ok(self.store()?.flag_changes(name, limit).await?)
    }
}
