//! The ports: one role trait a file, each a capability a store offers the use cases (methods
//! named entity-first), plus the queue and the external connections. A port names only model
//! types and the transaction seam; an adapter implements it (the store roles through
//! dialect layer's statement tables, once for both dialects).

mod audit;
mod blobs;
mod breaker;
mod connections;
mod delivery_admin;
mod files;
mod flags;
mod housekeeping;
mod keyed_state;
mod lease;
mod migrations;
mod passkeys;
mod pipeline;
mod queue;
mod schedule;
mod schema;
mod service_keys;
mod sign_in;
mod steps;
mod user_sessions;
mod webhooks;
mod workflow;
mod workflow_ops;

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
pub use keyed_state::KeyedStateStore;
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
pub use webhooks::WebhookStore;
pub use workflow::{TransitionError, WorkflowStore};
pub use workflow_ops::WorkflowOps;
