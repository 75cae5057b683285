//! What an operator did, as recorded in `jadpo_operator_actions`: the action, the item and its
//! state before the action, the operator's name (the database role is added by the store).

/// An operator action to record.
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
    /// Who acted (`--operator` or the OS user).
    pub operator: &'a str,
    /// Anything more.
    pub detail: Option<String>,
}
