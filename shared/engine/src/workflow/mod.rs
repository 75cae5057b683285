//! Workflows at work: runs started, advanced by external events and command results, and
//! cancelled ([`runs`]); Sessions ([`session`]); the operational checks ([`verify`]); export and
//! import between stores ([`transfer`]).
//!
//! Every transition is decided by the core's pure kernel and committed under optimistic
//! concurrency by the workflow store; this module reads, decides, commits and carries the new
//! commands to the queue.

pub mod adopt;
mod base;
pub mod cancel;
mod commands;
pub mod delete;
pub mod events;
pub mod runs;
pub mod session;
pub mod start;
pub mod transfer;
pub mod verify;
