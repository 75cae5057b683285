//! The HTTP edge over real stores, and its parsers fuzzed: one test binary.

mod common;

mod files;
mod fuzz;
mod http;
mod oidc;
mod operators;
mod passkeys;
mod runs;
mod sign_in;
mod webhooks;
