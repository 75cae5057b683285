//! What operators do to deliveries (`jadpo deliveries retry | discard | release`), each change
//! recorded in `jadpo_operator_actions` in the same transaction as the change, with the
//! delivery's state before it, the operator's name and the database role.
//!
//! Retrying a handled delivery is refused (its effect happened; running it again would repeat
//! it), and so is anything done to a discarded one: discarding is final and stays visible. So is
//! retrying a delivery whose run diverged (a retry asked a recorded call for another request),
//! or whose run left a call sent and unanswered longer ago than its connection's key window (the
//! provider may have forgotten the key and would act again): the operator checks with the
//! provider first, and discards the delivery or handles it by hand.

use jadpo_core::model::breaker::State;
use jadpo_core::model::delivery::{Delivery, DeliveryStatus};
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::{Store, StoreError};
use serde_json::json;

use crate::context::Engine;
use crate::operate::{Change, Operator};

/// Why an operator's change to a delivery was refused; nothing was changed or recorded.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryOpError {
    /// No store given holds that delivery.
    #[error("no delivery {0:?} in the stores given")]
    Unknown(String),
    /// Retrying or discarding a handled delivery.
    #[error("delivery {0:?} was handled; its effect happened and cannot be retried or discarded")]
    Handled(String),
    /// Anything on a discarded delivery.
    #[error("delivery {0:?} was discarded; discarding is final")]
    Discarded(String),
    /// A discard without a reason.
    #[error("a discard needs a reason: pass --reason TEXT")]
    NoReason,
    /// The delivery's run diverged; retrying would stop again (or send a new request under an
    /// old key).
    #[error(
        "delivery {0:?} is not retried: its run diverged ({1}); check what the provider did \
         under the run's keys (`jadpo deliveries show`), then discard it or act by hand"
    )]
    Diverged(String, String),
    /// A call of the delivery's run was sent, never answered, longer ago than the provider
    /// keeps keys.
    #[error(
        "delivery {id:?} is not retried: its call {operation} went out at {first_sent} under key \
         {key:?}, longer ago than connection {connection:?}'s key window of {window_s}s, so the \
         provider may act on it again; check with the provider, then discard it or act by hand"
    )]
    PastKeyWindow {
        id: String,
        operation: String,
        key: String,
        connection: String,
        first_sent: chrono::DateTime<chrono::Utc>,
        window_s: u64,
    },
    /// The store holding the delivery's step record was not given, so the retry cannot be
    /// checked.
    #[error(
        "delivery {0:?} is not retried: its subscriber calls a connection and keeps its step \
         record in store {1:?}, which was not given; give its URL (DATABASE_URL_<STORE>) so the \
         record can be checked"
    )]
    StepsStoreMissing(String, String),
    /// No such connection is declared.
    #[error("no connection named {0:?} is declared")]
    UnknownConnection(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Operator verbs over deliveries in every store of an engine.
pub struct DeliveryOps<'a> {
    engine: &'a Engine,
    operator: &'a Operator,
}

impl<'a> DeliveryOps<'a> {
    /// Verbs acting as `operator`.
    pub fn new(engine: &'a Engine, operator: &'a Operator) -> Self {
        Self { engine, operator }
    }

    /// The store holding delivery `id`, and the delivery as read there.
    async fn locate(
        &self,
        id: &str,
    ) -> Result<(&'a std::sync::Arc<dyn Store>, Delivery), DeliveryOpError> {
        for store in self.engine.stores.values() {
            if let Some(d) = store.delivery_get(id).await? {
                return Ok((store, d));
            }
        }
        Err(DeliveryOpError::Unknown(id.to_owned()))
    }

    /// Makes dead (or waiting) delivery `id` due now with a fresh round of attempts; the relay
    /// sends it.
    pub async fn retry(&self, id: &str) -> Result<Delivery, DeliveryOpError> {
        let (store, d) = self.locate(id).await?;
        self.refuse_unsafe_retry(&d).await?;
        self.change(store, id, "delivery.retry", None).await
    }

    /// Refuses a retry the delivery's step record says is unsafe: a diverged run, or a call
    /// sent and unanswered past its connection's key window.
    async fn refuse_unsafe_retry(&self, d: &Delivery) -> Result<(), DeliveryOpError> {
        let id = d.id.as_str();
        let Some(spec) = self.engine.app.subscriber(&d.subscriber) else {
            return Ok(());
        };
        // A subscriber declared to make no calls has no step record (nor, maybe, the table).
        if !self.engine.app.declares_calls(&spec.name) {
            return Ok(());
        }
        let Some(steps_store) = self.engine.stores.get(&spec.store) else {
            // A subscriber declared with a connection may have a step record there.
            return match &spec.connection {
                Some(_) => {
                    Err(DeliveryOpError::StepsStoreMissing(id.to_owned(), spec.store.clone()))
                }
                None => Ok(()),
            };
        };
        let Some(run) = steps_store.step_run_get(id).await? else {
            return Ok(());
        };
        if run.diverged {
            let why = run.divergence.unwrap_or_else(|| "no reason recorded".to_owned());
            return Err(DeliveryOpError::Diverged(id.to_owned(), why));
        }
        let now = self.engine.clock.now();
        for step in run.steps.iter().filter(|s| s.answered_at.is_none()) {
            let connection = step.operation.split(':').next().unwrap_or_default();
            let Some(window) = self.engine.app.key_window(connection) else {
                continue;
            };
            if jadpo_core::clock::after(step.first_sent_at, window) < now {
                return Err(DeliveryOpError::PastKeyWindow {
                    id: id.to_owned(),
                    operation: step.operation.clone(),
                    key: step.idempotency_key.clone(),
                    connection: connection.to_owned(),
                    first_sent: step.first_sent_at,
                    window_s: window.as_secs(),
                });
            }
        }
        Ok(())
    }

    /// Discards pending or dead delivery `id` for `reason`: final, and visible in its
    /// `last_failure` and the operator actions.
    pub async fn discard(&self, id: &str, reason: &str) -> Result<Delivery, DeliveryOpError> {
        if reason.trim().is_empty() {
            return Err(DeliveryOpError::NoReason);
        }
        let (store, _) = self.locate(id).await?;
        self.change(store, id, "delivery.discard", Some(reason)).await
    }

    async fn change(
        &self,
        store: &std::sync::Arc<dyn Store>,
        id: &str,
        action: &str,
        reason: Option<&str>,
    ) -> Result<Delivery, DeliveryOpError> {
        let mut change =
            Change::begin(store.as_ref(), self.operator, self.engine.clock.as_ref()).await?;
        let result = async {
            let d = store
                .delivery_get_locked(change.tx(), id)
                .await?
                .ok_or_else(|| DeliveryOpError::Unknown(id.to_owned()))?;
            match d.status {
                DeliveryStatus::Handled => return Err(DeliveryOpError::Handled(id.to_owned())),
                DeliveryStatus::Discarded => {
                    return Err(DeliveryOpError::Discarded(id.to_owned()));
                }
                DeliveryStatus::Pending | DeliveryStatus::Dead => {}
            }
            change
                .record(&OperatorAction {
                    action,
                    item_kind: "delivery",
                    item: id,
                    item_state: delivery_state(store.name(), &d),
                    detail: reason.map(str::to_owned),
                })
                .await?;
            let now = change.now();
            match reason {
                None => store.delivery_retry(change.tx(), id, now).await?,
                Some(why) => {
                    let why = format!("discarded by {}: {why}", self.operator);
                    store.delivery_discard(change.tx(), id, now, &why).await?
                }
            };
            Ok::<_, DeliveryOpError>(d)
        }
        .await;
        change.finish(result).await
    }

    /// Releases the deliveries a circuit breaker holds for `connection` in every store; how many
    /// per store. Each store's release is one operator action.
    pub async fn release(
        &self,
        connection: &str,
    ) -> Result<Vec<(String, Vec<String>)>, DeliveryOpError> {
        if !self.engine.app.connections().iter().any(|c| c == connection) {
            return Err(DeliveryOpError::UnknownConnection(connection.to_owned()));
        }
        let mut released = Vec::new();
        for store in self.engine.stores.values() {
            let mut change =
                Change::begin(store.as_ref(), self.operator, self.engine.clock.as_ref()).await?;
            let result = async {
                let now = change.now();
                let ids = store.breaker_release_held(change.tx(), connection, now).await?;
                // The state before: these deliveries were held; the record names each.
                let held =
                    json!({"store": store.name(), "held_deliveries": ids.len(), "released": ids});
                change
                    .record(&OperatorAction {
                        action: "delivery.release",
                        item_kind: "connection",
                        item: connection,
                        item_state: held,
                        detail: None,
                    })
                    .await?;
                Ok::<_, DeliveryOpError>(ids)
            }
            .await;
            released.push((store.name().to_owned(), change.finish(result).await?));
        }
        Ok(released)
    }

    /// The stores whose circuit breaker for `connection` is open or half-open now: a delivery
    /// retried or released there is held again at its next attempt, until the breaker closes.
    pub async fn holding_breakers(&self, connection: &str) -> Result<Vec<String>, StoreError> {
        let mut holding = Vec::new();
        for store in self.engine.stores.values() {
            let breakers = store.breakers_list().await?;
            if breakers.iter().any(|b| b.connection == connection && b.state != State::Closed) {
                holding.push(store.name().to_owned());
            }
        }
        Ok(holding)
    }
}

/// A delivery's state as recorded with an operator action.
fn delivery_state(store: &str, d: &Delivery) -> serde_json::Value {
    json!({
        "store": store,
        "subscriber": d.subscriber,
        "status": d.status.as_str(),
        "attempts": d.attempts,
        "next_attempt_at": d.next_attempt_at.to_rfc3339(),
        "last_failure": d.last_failure,
        "event_type": d.event.event_type,
        "event_id": d.event.id,
    })
}
