//! The ports: one role trait a file, each a capability a store offers the use cases (methods
//! named entity-first), plus the queue and the external connections. A port names only model
//! types and the transaction seam; an adapter implements it (the store roles through
//! dialect layer's statement tables, once for both dialects).

pub mod audit;
pub mod blobs;
pub mod breaker;
pub mod connections;
pub mod delivery_admin;
pub mod files;
pub mod flags;
pub mod housekeeping;
pub mod lease;
pub mod migrations;
pub mod passkeys;
pub mod pipeline;
pub mod queue;
pub mod schedule;
pub mod schema;
pub mod service_keys;
pub mod sign_in;
pub mod steps;
pub mod user_sessions;
pub mod workflow;
pub mod workflow_ops;

pub use audit::AuditStore;
pub use blobs::{BlobError, BlobHead, BlobInfo, Blobs, Presigned, UploadTerms, Urls};
pub use breaker::BreakerStore;
pub use connections::{
    ConnectionError, ConnectionRequest, ConnectionResponse, Connections, NoConnections,
};
pub use delivery_admin::DeliveryAdminStore;
pub use files::FileStore;
pub use flags::FlagStore;
pub use housekeeping::HousekeepingStore;
pub use lease::LeaseStore;
pub use migrations::{MigrationSession, MigrationStore};
pub use passkeys::PasskeyStore;
pub use pipeline::PipelineStore;
pub use queue::{Queue, QueueError, QueueMessage, SendReport};
pub use schedule::ScheduleStore;
pub use schema::SchemaIntrospection;
pub use service_keys::ServiceKeyStore;
pub use sign_in::SignInStore;
pub use steps::StepStore;
pub use user_sessions::UserSessionStore;
pub use workflow::WorkflowStore;
pub use workflow_ops::WorkflowOps;
