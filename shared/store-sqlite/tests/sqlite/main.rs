//! The SQLite adapter on real files: one test binary.

mod advisory;
mod conformance;
mod group_commit;
mod group_commit_crash;
mod plans;
mod statements;
