//! The deployed function binaries run as processes, the docs' examples, and what each
//! function links: one test binary.

mod binaries;
mod docs;
mod linkage;
