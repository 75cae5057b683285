//! `jadpo-local`, the real process, driven as its users drive it: one test binary.

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod clock_jump;
mod docs_examples;
mod local_run;
mod outages;
mod workers;
