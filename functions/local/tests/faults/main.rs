//! `jadpo-local` crashed on purpose at its fault points (the `crash-points` feature, which
//! `Cargo.toml` requires for this binary).

#[path = "../common/mod.rs"]
mod common;

mod crash_points;
