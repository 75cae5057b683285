//! Operators: one validated identity for every verb ([`Operator`]), and one shape for every
//! change an operator makes ([`Change`]): begin a transaction on the store, act, record the
//! action in `jadpo_operator_actions` with the item's state before it, the operator's name and
//! the database role, then commit, or roll all of it back. A change is never made without its
//! record, and a record never describes a change that did not commit.
//!
//! The verbs themselves, one file per thing operated on: [`deliveries`] (retry, discard,
//! release), [`breakers`] (open, close), [`flags`] (set, history), [`keys`] (service keys) and
//! [`tokens`] (users' API tokens). They are told apart from the use cases they act on by where
//! they live, not by a plural (`deliver` delivers; `operate::deliveries` is what operators do to
//! deliveries).

pub mod breakers;
pub mod deliveries;
pub mod flags;
pub mod keys;
pub mod tokens;

use chrono::{DateTime, Utc};
use jadpo_core::clock::Clock;
use jadpo_core::id::new_id;
use jadpo_core::model::operator::{OperatorAction, StoredAction};
use jadpo_core::{Store, StoreError, Transaction, commit_or_rollback};

/// Who is acting: a name that is not blank (`--operator`, `JADPO_OPERATOR` or the OS user), and
/// the operating-system account the verb runs from (`user@host`), recorded beside the name since
/// a name is only what the operator typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    name: String,
    account: Option<String>,
}

/// An operator's name was blank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the operator's name is empty: pass --operator NAME")]
pub struct NoOperator;

impl Operator {
    /// `name`, trimmed; refused when blank.
    pub fn new(name: &str) -> Result<Self, NoOperator> {
        let name = name.trim();
        if name.is_empty() {
            Err(NoOperator)
        } else {
            Ok(Self { name: name.to_owned(), account: None })
        }
    }

    /// The same operator, acting from the operating-system account `account` (`user@host`).
    #[must_use]
    pub fn from_account(self, account: &str) -> Self {
        Self { account: Some(account.to_owned()), ..self }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The operating-system account, when known.
    pub fn account(&self) -> Option<&str> {
        self.account.as_deref()
    }
}

impl std::fmt::Display for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// One operator change on one store, in one transaction.
pub struct Change<'a> {
    store: &'a dyn Store,
    operator: &'a Operator,
    clock: &'a dyn Clock,
    tx: Box<dyn Transaction>,
    now: DateTime<Utc>,
}

impl<'a> Change<'a> {
    /// Begins a change on `store` as `operator`, at the clock's current time.
    pub async fn begin(
        store: &'a dyn Store,
        operator: &'a Operator,
        clock: &'a dyn Clock,
    ) -> Result<Self, StoreError> {
        let now = clock.now();
        let tx = store.begin().await?;
        Ok(Self { store, operator, clock, tx, now })
    }

    /// The change's transaction, for the reads and writes that make it.
    pub fn tx(&mut self) -> &mut dyn Transaction {
        self.tx.as_mut()
    }

    /// When the change is made.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// Who makes it.
    pub fn operator(&self) -> &'a Operator {
        self.operator
    }

    /// The database role the change runs as (recorded with it).
    pub async fn db_role(&mut self) -> Result<String, StoreError> {
        self.store.db_role(self.tx.as_mut()).await
    }

    /// Records `action` in `jadpo_operator_actions`, inside the change's transaction.
    pub async fn record(&mut self, action: &OperatorAction<'_>) -> Result<(), StoreError> {
        let db_role = self.db_role().await?;
        let stored = StoredAction {
            id: new_id(self.clock).to_string(),
            acted_at: self.now,
            action: action.action.to_owned(),
            item_kind: action.item_kind.to_owned(),
            item: action.item.to_owned(),
            item_state: action.item_state.to_string(),
            operator: self.operator.name().to_owned(),
            db_role,
            detail: action.detail.clone(),
            os_account: self.operator.account().map(str::to_owned),
        };
        self.store.operator_action_insert(self.tx.as_mut(), &stored).await
    }

    /// Commits when `result` is `Ok`, else rolls everything back, and returns `result`.
    pub async fn finish<T, E: From<StoreError>>(self, result: Result<T, E>) -> Result<T, E> {
        commit_or_rollback(self.tx, result).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_name_is_refused_and_a_name_is_trimmed() {
        for blank in ["", " ", "\t\n"] {
            assert_eq!(Operator::new(blank), Err(NoOperator), "{blank:?}");
        }
        assert_eq!(Operator::new("  dora ").map(|o| o.to_string()), Ok("dora".to_owned()));
        assert_eq!(NoOperator.to_string(), "the operator's name is empty: pass --operator NAME");
    }
}
