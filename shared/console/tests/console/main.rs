//! The operator console over the sample shop: one test binary.

mod common;

mod browser;
mod console;
mod operate;
