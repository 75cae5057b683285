//! The operator-action log every operator verb writes to, in the same transaction as its change.

use chrono::{DateTime, Utc};
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::model::operator::StoredAction;
use jadpo_core::{Store, StoreError, Transaction};

/// Records `action` inside `tx`, with the database role `tx` runs as.
pub async fn record_operator_action(
    store: &dyn Store,
    tx: &mut dyn Transaction,
    action: &OperatorAction<'_>,
    id: uuid::Uuid,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let db_role = store.db_role(tx).await?;
    let stored = StoredAction {
        id: id.to_string(),
        acted_at: now,
        action: action.action.to_owned(),
        item_kind: action.item_kind.to_owned(),
        item: action.item.to_owned(),
        item_state: action.item_state.to_string(),
        operator: action.operator.to_owned(),
        db_role,
        detail: action.detail.clone(),
    };
    store.operator_action_insert(tx, &stored).await
}
