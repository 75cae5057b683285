//! The statement tables, one per role: which statements a role runs and the parameters of
//! each, in order. The text is each adapter's.

pub mod audit;
pub mod breaker;
pub mod delivery_admin;
pub mod files;
pub mod flags;
pub mod housekeeping;
pub mod keyed_state;
pub mod lease;
pub mod passkeys;
pub mod pipeline;
pub mod schedule;
pub mod service_keys;
pub mod sign_in;
pub mod steps;
pub mod user_sessions;
pub mod webhooks;
pub mod workflow;

pub use audit::AuditSql;
pub use breaker::BreakerSql;
pub use delivery_admin::DeliveryAdminSql;
pub use files::FileSql;
pub use flags::FlagSql;
pub use housekeeping::HousekeepingSql;
pub use keyed_state::KeyedStateSql;
pub use lease::LeaseSql;
pub use passkeys::PasskeySql;
pub use pipeline::PipelineSql;
pub use schedule::ScheduleSql;
pub use service_keys::ServiceKeySql;
pub use sign_in::SignInSql;
pub use steps::StepSql;
pub use user_sessions::UserSessionSql;
pub use webhooks::WebhookSql;
pub use workflow::WorkflowSql;
