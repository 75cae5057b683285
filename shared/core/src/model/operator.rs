//! What an operator did, as recorded in `jadpo_operator_actions`: the action, the item and its
//! state before the action, and (added when it is recorded) the operator's name and the database
//! role.

use chrono::{DateTime, Utc};

/// An operator action to record (the operator and the database role are added by whoever
/// records it, from the change it belongs to).
#[derive(Debug, Clone)]
pub struct OperatorAction<'a> {
    /// Which action, e.g. `schedule.pause`.
    pub action: &'a str,
    /// What kind of item, e.g. `schedule`.
    pub item_kind: &'a str,
    /// Which item.
    pub item: &'a str,
    /// The item's state before the action.
    pub item_state: serde_json::Value,
    /// Anything more.
    pub detail: Option<String>,
}

/// Which recorded operator actions to read: each field given narrows the list, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionFilter {
    /// Only actions on this kind of item (`delivery`, `schedule`, `connection`, …).
    pub item_kind: Option<String>,
    /// Only actions on this item.
    pub item: Option<String>,
    /// Only actions by this operator (the name it gave).
    pub operator: Option<String>,
    /// Only actions at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// At most this many.
    pub limit: u32,
}

/// A stored operator action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAction {
    /// Its id.
    pub id: String,
    /// When.
    pub acted_at: DateTime<Utc>,
    /// Which action (`schedule.pause`, ...).
    pub action: String,
    /// What kind of item.
    pub item_kind: String,
    /// Which item.
    pub item: String,
    /// The item's state then (JSON text).
    pub item_state: String,
    /// Who.
    pub operator: String,
    /// The database role in use.
    pub db_role: String,
    /// Anything more (a reason, the run started).
    pub detail: Option<String>,
    /// The operating-system account the verb ran from (`user@host`), when recorded.
    pub os_account: Option<String>,
}
