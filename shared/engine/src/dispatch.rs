//! The one place a queue message is read: its [`Pointer`] parsed, then routed to the delivery
//! of an event to its subscriber ([`crate::deliver`]) or to the workflow command it names
//! ([`crate::workflow::runs`]).

use std::collections::BTreeMap;

use std::sync::Arc;

use jadpo_core::model::message::Pointer;
use jadpo_core::{Store, StoreError};

use crate::batch::{deliver_many, not_started};
use crate::context::Engine;
use crate::deliver::{DeliveryResult, deliver};
use crate::workflow::runs::{CommandError, CommandResult, run_command};

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatched {
    /// It pointed at a delivery.
    Delivery(DeliveryResult),
    /// It pointed at a workflow command.
    Command(CommandResult),
}

/// A fault of the infrastructure or of the message: the queue should retry it (and after its
/// retries move it to the dead-letter queue).
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// The body is not a pointer this runtime reads, or names a store it does not have.
    #[error("unreadable message: {0}")]
    Malformed(String),
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A workflow command could not run now (its run is busy, or not runnable here).
    #[error(transparent)]
    Command(#[from] CommandError),
}

/// Handles one queue message body.
pub async fn dispatch(e: &Engine, body: &str) -> Result<Dispatched, DispatchError> {
    let pointer = Pointer::parse(body).map_err(DispatchError::Malformed)?;
    let Some(store) = e.stores.get(pointer.store()) else {
        let store = pointer.store();
        let why = format!("the message names store {store:?}, which is not configured");
        return Err(DispatchError::Malformed(why));
    };
    match &pointer {
        Pointer::Delivery { delivery_id, .. } => {
            Ok(Dispatched::Delivery(deliver(e, store, delivery_id).await?))
        }
        Pointer::Command { store, command_id } => {
            Ok(Dispatched::Command(run_command(e, store, command_id).await?))
        }
    }
}

/// One store's delivery messages among a worker's: the store, and each message's place and
/// delivery id.
type StoreMessages<'e> = (&'e Arc<dyn Store>, Vec<(usize, String)>);

/// Handles the message bodies a worker holds at once, answering each in the same order: the
/// deliveries of each store go through [`deliver_many`] (batched per subscribers' store), the
/// rest one at a time as [`dispatch`] would.
pub async fn dispatch_many(e: &Engine, bodies: &[&str]) -> Vec<Result<Dispatched, DispatchError>> {
    let mut results: Vec<Option<Result<Dispatched, DispatchError>>> =
        bodies.iter().map(|_| None).collect();
    let mut deliveries: BTreeMap<&str, StoreMessages<'_>> = BTreeMap::new();
    for (at, body) in bodies.iter().enumerate() {
        match Pointer::parse(body) {
            Ok(Pointer::Delivery { store, delivery_id }) => {
                match e.stores.get_key_value(store.as_str()) {
                    Some((name, store)) => {
                        let (_, items) =
                            deliveries.entry(name.as_str()).or_insert((store, Vec::new()));
                        items.push((at, delivery_id));
                    }
                    None => results[at] = Some(dispatch(e, body).await),
                }
            }
            _ if e.near_deadline() => results[at] = Some(Err(not_started().into())),
            _ => results[at] = Some(dispatch(e, body).await),
        }
    }
    for (store, items) in deliveries.into_values() {
        let ids: Vec<String> = items.iter().map(|(_, id)| id.clone()).collect();
        let delivered = deliver_many(e, store, &ids).await;
        for ((at, _), result) in items.into_iter().zip(delivered) {
            results[at] = Some(result.map(Dispatched::Delivery).map_err(DispatchError::from));
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(StoreError::internal("a message got no result").into())))
        .collect()
}
