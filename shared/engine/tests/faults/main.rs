//! The engine's fault-injection tests: each arms named fault points (the `failpoints` feature,
//! which `Cargo.toml` requires for this binary) and shows what a crash at each leaves, on both
//! adapters. Fault points are process-wide: nextest runs each test in a process of its own, and
//! under `cargo test` the tests that arm them hold `fail`'s scenario lock, one at a time.

#[path = "../support/files_app.rs"]
mod files_app;
#[path = "../support/retention_app.rs"]
mod retention_app;
#[path = "../support/state_app.rs"]
mod state_app;
#[path = "../support/steps_app.rs"]
mod steps_app;

mod audit;
mod batch;
mod batch_faults;
mod breaker_faults;
mod cancel_conflict;
mod event_payloads;
mod fencing;
mod files_faults;
mod housekeeping_faults;
mod migrate_faults;
mod passkey_faults;
mod pipeline_faults;
mod retention_faults;
mod run_leases;
mod sign_in_faults;
mod start_once;
mod state_faults;
mod step_faults;
mod steps;
mod tick_faults;
mod webhook_faults;
mod workflow_faults;
