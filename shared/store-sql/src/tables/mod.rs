//! The statement tables, one per role: which statements a role runs and the parameters of
//! each, in order. The text is each adapter's.

mod audit;
mod breaker;
mod delivery_admin;
mod files;
mod flags;
mod housekeeping;
mod lease;
mod passkeys;
mod pipeline;
mod schedule;
mod service_keys;
mod sign_in;
mod steps;
mod user_sessions;
mod workflow;

pub use audit::AuditSql;
pub use breaker::BreakerSql;
pub use delivery_admin::DeliveryAdminSql;
pub use files::FileSql;
pub use flags::FlagSql;
pub use housekeeping::HousekeepingSql;
pub use lease::LeaseSql;
pub use passkeys::PasskeySql;
pub use pipeline::PipelineSql;
pub use schedule::ScheduleSql;
pub use service_keys::ServiceKeySql;
pub use sign_in::SignInSql;
pub use steps::StepSql;
pub use user_sessions::UserSessionSql;
pub use workflow::WorkflowSql;
