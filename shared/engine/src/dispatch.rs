//! The one place a queue message is read: its [`Pointer`] parsed, then routed to the delivery
//! of an event to its subscriber ([`crate::deliver`]) or to the workflow command it names
//! ([`crate::workflow::runs`]).

use jadpo_core::StoreError;
use jadpo_core::model::message::Pointer;

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
