//! The model: pure data and the decisions made on it (rows, leases, alerts, operator actions,
//! the breaker's state machine; schedule timing is `jadpo-schedule`'s, workflow definitions, the
//! kernel and its state `jadpo-workflow`'s, migration plans and table descriptions
//! `jadpo-schema`'s). It imports
//! no port, no use case and no part of the application API, so anything above can use it and it
//! can be tested without a database.

pub mod alert;
pub mod audit;
pub mod breaker;
pub mod delivery;
pub mod encoding;
pub mod event;
pub mod file;
pub mod file_field;
pub mod flags;
pub mod housekeeping;
pub mod lease;
pub mod message;
pub mod operator;
pub mod passkey;
pub mod principal;
pub mod service_key;
pub mod sign_in;
pub mod step;
pub mod user_session;
pub mod webhook;
