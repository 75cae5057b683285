//! The store roles implemented once for [`crate::SqlStore`]: each runs its table's statements
//! in order, binds their parameters and decodes rows by column name.

mod audit;
mod breaker;
mod delivery_admin;
mod files;
mod flags;
mod housekeeping;
mod keyed_state;
mod lease;
mod passkeys;
mod pipeline;
mod schedule;
mod service_keys;
mod sign_in;
mod steps;
mod user_sessions;
mod webhooks;
pub(crate) mod workflow;
mod workflow_ops;
