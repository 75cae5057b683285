//! Schedules at work: the tick pass ([`tick`]) that records runs and skipped ticks under each
//! schedule's lease, and the operator verbs ([`ScheduleOps`]) that pause, resume and trigger them.

mod emit;
mod ops;
mod tick;

pub use ops::{ScheduleOpError, ScheduleOps};
pub use tick::{TickReport, sync, tick};

pub use crate::settings::ScheduleSettings;
