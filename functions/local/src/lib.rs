//! `jadpo-local`'s parts, kept out of the deployed functions: the in-process queue that stands in
//! for SQS ([`queue`]), the loops that run the relay, the delivery worker, schedule ticks and
//! housekeeping in one process ([`loops`]), and the sink that stands in for external services
//! ([`sink`]). The binary (`main.rs`) wires them with `jadpo-runtime`'s configuration; the
//! runtime's integration tests use them too.

pub mod loops;
pub mod queue;
pub mod sink;
