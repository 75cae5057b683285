//! Inbound webhooks: what a provider's request must prove before any database work
//! ([`verify`]: the signature over the raw bytes, in constant time, under any of a source's live
//! secrets, the signed timestamp within its tolerance, and the event key taken from signed
//! material only, so that an altered or stripped id header cannot make one event two), and the
//! event received once ([`receive`]: its receipt, the action it feeds, and that action's writes
//! and events in one transaction); each source's rate per process ([`limit`]).

pub mod limit;
pub mod receive;
pub mod verify;
