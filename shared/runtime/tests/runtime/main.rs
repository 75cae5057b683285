//! The runtime's wiring: connections and schedules, one test binary.

mod connections;
mod schedules;
