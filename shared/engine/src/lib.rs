//! `jadpo-engine`: the use cases, written once over `jadpo-core`'s ports.
//!
//! Every entry point takes the runtime context ([`Engine`]): the application, its open
//! stores, the queue, the clock, the connections and the limits. The binaries (`jadpo-runtime`'s
//! wiring, the Lambda functions, `jadpo-local`, the CLI) build one and call in; nothing here
//! reads the environment or names a driver.
//!
//! * the event path: [`commit`] (an action, its events, deliveries and idempotency record in one
//!   transaction), [`relay`] (due deliveries and commands to the queue), [`dispatch`] (the one
//!   place a queue message is read, routed to [`deliver`]: one delivery to its subscriber, exactly
//!   one effect; or to a workflow command; [`batch`] delivers the messages a worker holds at
//!   once, a subscriber's deliveries in one transaction), with the circuit breaker around an
//!   attempt ([`breaker`]);
//! * background work: [`schedule`] (tick passes, operator verbs), [`housekeeping`] (retention,
//!   rescue, alerts), each under fenced leases;
//! * [`workflow`]: runs, Sessions and `jadpo verify`;
//! * [`services`]: the built-in services, over [`services::state`], keyed state claimed under a
//!   fenced lease and written by a compare-and-set that commits with the events it emits;
//! * the edges' other use cases: [`authenticate`] (a credential to its principal), sign-in
//!   ([`sign_in`], [`passkeys`], [`oidc`]) and [`files`];
//! * operators: the verbs under [`operate`] (deliveries, breakers, flags, service keys, API
//!   tokens), each change recorded through [`operate::Change`] in the same transaction; the
//!   verbs that belong to one domain's internals stay beside it (`schedule::ops`,
//!   `workflow::cancel`, `workflow::delete`, `workflow::adopt`, [`audit`]'s erase).

/// A named fault-injection point: with the `failpoints` feature and the point configured
/// (`fail::cfg(name, "return")`), the enclosing function returns an "unavailable" error there,
/// as if the process had crashed at that step; configured with a callback, the callback runs
/// there (a test's pause). Without the feature it compiles to nothing.
/// Each time a point fails this way it is counted ([`fault_points::fired`]), so that a crash
/// loop can show that every point it arms was reached.
macro_rules! fault {
    ($name:literal) => {
        fail::fail_point!($name, |_| {
            $crate::fault_points::record($name);
            Err(jadpo_core::StoreError::unavailable(concat!("fault injected at ", $name)).into())
        })
    };
}
pub(crate) use fault;

#[cfg(feature = "failpoints")]
pub mod fault_points;

pub mod audit;
pub mod authenticate;
pub mod batch;
pub mod breaker;
pub mod check;
pub mod commit;
pub mod context;
pub mod deliver;
pub mod digest;
pub mod dispatch;
pub mod files;
mod gates;
pub mod housekeeping;
pub mod key_sets;
pub mod migrate;
pub mod oidc;
pub mod operate;
pub mod passkeys;
pub mod relay;
pub mod schedule;
pub mod sealing;
pub mod services;
pub mod settings;
pub mod sign_in;
pub mod steps;
pub mod workflow;

pub use context::Engine;
pub use settings::{EngineSettings, WorkflowSettings};
