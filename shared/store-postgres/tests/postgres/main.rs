//! The PostgreSQL adapter against a real server: one test binary.

mod conformance;
mod script_placement;
mod statements;
mod tls;
