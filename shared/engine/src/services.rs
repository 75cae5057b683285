//! The built-in services (polls, OAuth grants, batch runs, inbound webhooks), each built on one
//! primitive: [`state`], a keyed state row claimed under a fenced lease and written by a
//! compare-and-set in the transaction that writes the events it emits. A service never holds a
//! transaction across a call to the outside world: it claims, calls, then commits with the check,
//! and a holder that lost its lease meanwhile commits nothing.

pub mod state;
pub mod webhooks;
