//! The engine's use cases over real stores, on both adapters: one test binary.

#[path = "../support/files_app.rs"]
mod files_app;
#[path = "../support/retention_app.rs"]
mod retention_app;
#[path = "../support/state_app.rs"]
mod state_app;
#[path = "../support/steps_app.rs"]
mod steps_app;

mod authenticate;
mod breakers;
mod clock_jumps;
mod files;
mod flags;
mod keyed_state;
mod pipeline;
mod relay_backlog;
mod relay_refusals;
mod retention;
mod time_bounds;
mod verify;
mod versions;
mod webhooks;
mod workflows;
