//! The `jadpo` command line, run as a process against real stores: one test binary.

mod common;

mod check;
mod console;
mod deliveries;
mod help;
mod manifest;
mod migrate;
mod operators;
mod pipe;
mod roles;
mod schedules;
mod transfer;
mod verify;
