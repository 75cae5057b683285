//! `jadpo-local`'s parts, kept out of the deployed functions: the in-process queue that stands in
//! for SQS ([`queue`]), the loops that run the relay, the delivery worker, schedule ticks and
//! housekeeping in one process ([`loops`]), the sink that stands in for external services
//! ([`sink`]), the sign-in page ([`page`]) and how the process stops ([`stopping`]); with the test-only `crash-points` feature, crashes
//! on purpose at named step boundaries (`crash`). The binary (`main.rs`) wires them with `jadpo-runtime`'s configuration; the
//! runtime's integration tests use them too.

#[cfg(feature = "crash-points")]
pub mod crash;
pub mod loops;
pub mod page;
pub mod queue;
pub mod sink;
pub mod stopping;
