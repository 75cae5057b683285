//! `jadpo-application`: the API an application is written against. What it declares to the
//! runtime (stores, events, actions, subscribers, capabilities, schedules, workflows and its own
//! migrations) and the contexts its handlers run in. It sits above `jadpo-core` (the model, the
//! ports, the seam) and below the engine that runs it, so an application's crate needs no more
//! than these two.
//!
//! Declaration errors (a subscriber on an unknown event, a store nobody declared, a name used
//! twice) are reported by [`ApplicationBuilder::build`], naming what is wrong, so a bad
//! declaration stops a process at start rather than at the first request.

mod builder;
mod callers;
mod checks;
mod handlers;
mod placement;
mod retry;
mod services;
mod users;
mod webhooks;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use handlers::{
    Action, ActionOutput, Call, CallKind, Capability, CapabilityContext, CommandRequest,
    FlagAccess, HandlerContext, HandlerError, RunServices, Subscriber, UploadRefused, check_upload,
};

pub use builder::ApplicationBuilder;
pub use callers::{Callers, ServiceCallers};
pub use jadpo_core::model::event::{Emitted, Event};
pub use placement::{Feature, Placed, SQLITE_ONLY};
pub use retry::RetryPolicy;
pub use services::ServiceEntity;
pub use users::{
    FirstSignIn, OidcProvider, PasskeyAddedMail, SignInMail, UserEntity, sign_in_link,
};
pub use webhooks::{HmacScheme, WebhookScheme, WebhookSource};

use checks::{
    check_audit, check_file_fields, check_names, check_services, check_stores, check_users,
};
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::breaker::BreakerPolicy;
use jadpo_core::model::file_field::FileField;
use jadpo_core::model::flags::Rollout;
use jadpo_core::model::sign_in;
use jadpo_core::model::step::StepMode;
use jadpo_core::sql::Dialect;
use jadpo_schedule::ScheduleError;
use jadpo_schedule::{Schedule, ScheduleSpec};
use jadpo_schema::migrate::Migration;
use jadpo_workflow::def::WorkflowDef;

/// Why an application's declaration was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AppError {
    /// A declaration names an action or subscriber that is not declared.
    #[error("no action or subscriber named {0:?} is declared (single_keyed_call, calls)")]
    UnknownHandler(String),
    /// A webhook source declared wrong.
    #[error("webhook source {webhook:?}: {why}")]
    BadWebhook { webhook: String, why: String },
    /// A store name is not usable (it becomes part of `DATABASE_URL_<STORE>`).
    #[error("store name {0:?} must be lower case letters, digits and '_', starting with a letter")]
    BadStoreName(String),
    /// An action, subscriber or event name is not usable.
    #[error(
        "{kind} name {name:?} must be lower case letters, digits, '_' and '.', starting with a letter"
    )]
    BadName {
        /// What was named.
        kind: &'static str,
        name: String,
    },
    /// The same name was declared twice.
    #[error("{kind} {name:?} is declared twice")]
    Duplicate {
        /// What was named.
        kind: &'static str,
        name: String,
    },
    /// Something names a store nobody declared.
    #[error("{what} uses store {store:?}, which is not declared (stores: {declared})")]
    UnknownStore {
        /// What uses it.
        what: String,
        store: String,
        /// The declared stores.
        declared: String,
    },
    /// A subscriber listens to an event nobody declared.
    #[error("subscriber {subscriber:?} listens to event {event:?}, which is not declared")]
    UnknownEvent { subscriber: String, event: String },
    /// A subscriber (or a handler declared with `calls`) calls a connection nobody declared.
    #[error("{subscriber:?} calls connection {connection:?}, which is not declared")]
    UnknownConnection { subscriber: String, connection: String },
    /// A workflow's id or version does not fit the stores, or an older version has no current
    /// one.
    #[error("{0}")]
    BadWorkflow(String),
    /// A workflow uses a capability nobody declared.
    #[error("workflow {workflow:?} uses capability {capability:?}, which is not declared")]
    UnknownCapability { workflow: String, capability: String },
    /// No store at all.
    #[error("an application declares at least one store")]
    NoStore,
    /// A schedule's timing is invalid.
    #[error(transparent)]
    BadSchedule(#[from] ScheduleError),
    /// The user entity's store, table or columns are not plain SQL identifiers, or its mail
    /// connection is not declared.
    #[error("user entity: {0}")]
    BadUsers(String),
    /// Several stores are declared and a feature that keeps state was not told which one.
    #[error(
        "{feature} keep their state in one store, and with several stores declared it must be \
         named: add .{method}(\"<store>\") to the declaration (stores: {declared})"
    )]
    StoreNotNamed {
        /// The feature (`schedules`, `flags`).
        feature: &'static str,
        /// The builder method that names its store.
        method: &'static str,
        /// The declared stores.
        declared: String,
    },
    /// A file field's declaration is not usable.
    #[error("file field {field}: {problem}")]
    BadFileField {
        /// `table.column`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A schedule emits an event nobody declared.
    #[error("schedule {schedule:?} emits event {event:?}, which is not declared")]
    ScheduleEvent { schedule: String, event: String },
}

/// How long housekeeping keeps a workflow's finished runs and its idle Sessions (`None`: kept
/// until an operator deletes them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkflowRetention {
    /// A run that finished (completed, failed, cancelled, cancellation failed) is deleted, with
    /// its events and commands, this long after its last change.
    pub finished_runs: Option<std::time::Duration>,
    /// A Session bound to a finished run of the workflow is deleted this long after its last
    /// change.
    pub idle_sessions: Option<std::time::Duration>,
}

/// A declared action.
#[derive(Clone)]
pub struct ActionSpec {
    /// Its name (`POST /actions/{name}`).
    pub name: String,
    /// The store its transaction runs on.
    pub store: String,
    /// Who may call it.
    pub callers: Callers,
    /// Its code.
    pub handler: Arc<dyn Action>,
    /// How its changing calls are recorded.
    pub steps: StepMode,
}

/// A declared subscriber.
#[derive(Clone)]
pub struct SubscriberSpec {
    /// Its name, unique in the application.
    pub name: String,
    /// The event type it handles.
    pub event: String,
    /// The store it writes (its handled records live there).
    pub store: String,
    /// The connection it calls, whose circuit breaker gates its deliveries.
    pub connection: Option<String>,
    /// How failed deliveries are retried.
    pub retry: RetryPolicy,
    /// Its code.
    pub handler: Arc<dyn Subscriber>,
    /// How its changing calls are recorded.
    pub steps: StepMode,
}

/// An application.
#[derive(Clone)]
pub struct Application {
    name: String,
    stores: Vec<String>,
    events: Vec<String>,
    actions: BTreeMap<String, ActionSpec>,
    subscribers: BTreeMap<String, SubscriberSpec>,
    connections: Vec<String>,
    /// The connections each action or subscriber is declared to call ([`ApplicationBuilder::calls`]).
    calls: BTreeMap<String, Vec<String>>,
    breakers: BTreeMap<String, BreakerPolicy>,
    key_windows: BTreeMap<String, std::time::Duration>,
    workflows: BTreeMap<String, (Arc<WorkflowDef>, String)>,
    /// Older versions kept to finish the runs started on them, by `(id, version)`.
    draining: BTreeMap<(String, String), Arc<WorkflowDef>>,
    retention: BTreeMap<String, WorkflowRetention>,
    unbound_sessions: Option<std::time::Duration>,
    capabilities: BTreeMap<String, Arc<dyn Capability>>,
    migrations: Vec<(String, Dialect, Migration)>,
    schedules: BTreeMap<String, ScheduleSpec>,
    schedule_store: Option<String>,
    flags: BTreeMap<String, Rollout>,
    flags_store: Option<String>,
    audited: Vec<AuditSpec>,
    file_fields: Vec<FileField>,
    workflow_callers: BTreeMap<String, Callers>,
    users: Option<UserEntity>,
    services: Option<ServiceEntity>,
    webhooks: BTreeMap<String, WebhookSource>,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("name", &self.name)
            .field("stores", &self.stores)
            .field("events", &self.events)
            .field("actions", &self.actions.keys().collect::<Vec<_>>())
            .field("subscribers", &self.subscribers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Starts a declaration.
    pub fn builder(name: &str) -> ApplicationBuilder {
        ApplicationBuilder::new(Application {
            name: name.to_owned(),
            stores: Vec::new(),
            events: Vec::new(),
            actions: BTreeMap::new(),
            subscribers: BTreeMap::new(),
            connections: Vec::new(),
            calls: BTreeMap::new(),
            breakers: BTreeMap::new(),
            key_windows: BTreeMap::new(),
            workflows: BTreeMap::new(),
            draining: BTreeMap::new(),
            retention: BTreeMap::new(),
            unbound_sessions: None,
            capabilities: BTreeMap::new(),
            migrations: Vec::new(),
            schedules: BTreeMap::new(),
            schedule_store: None,
            flags: BTreeMap::new(),
            flags_store: None,
            audited: Vec::new(),
            file_fields: Vec::new(),
            workflow_callers: BTreeMap::new(),
            users: None,
            services: None,
            webhooks: BTreeMap::new(),
        })
    }

    /// The application's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Declared stores, the default store first.
    pub fn stores(&self) -> &[String] {
        &self.stores
    }

    /// The default store (configured by `DATABASE_URL`).
    pub fn default_store(&self) -> &str {
        self.stores.first().map_or("main", String::as_str)
    }

    /// Whether `event_type` is declared.
    pub fn has_event(&self, event_type: &str) -> bool {
        self.events.iter().any(|e| e == event_type)
    }

    /// The action called `name`.
    pub fn action(&self, name: &str) -> Option<&ActionSpec> {
        self.actions.get(name)
    }

    /// Every action's name, in order.
    pub fn action_names(&self) -> impl Iterator<Item = &str> {
        self.actions.keys().map(String::as_str)
    }

    /// The subscriber called `name`.
    pub fn subscriber(&self, name: &str) -> Option<&SubscriberSpec> {
        self.subscribers.get(name)
    }

    /// The declared event types, in declaration order.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// The declared workflows' ids, in order.
    pub fn workflow_ids(&self) -> impl Iterator<Item = &str> {
        self.workflows.keys().map(String::as_str)
    }

    /// The subscribers of `event_type`, by name.
    pub fn subscribers_of<'a>(
        &'a self,
        event_type: &'a str,
    ) -> impl Iterator<Item = &'a SubscriberSpec> {
        self.subscribers.values().filter(move |s| s.event == event_type)
    }

    /// The workflow `id` and the store its runs live in.
    pub fn workflow(&self, id: &str) -> Option<(&Arc<WorkflowDef>, &str)> {
        self.workflows.get(id).map(|(d, s)| (d, s.as_str()))
    }

    /// The graph of workflow `id` at `version`: the current one, or an older version declared
    /// to finish its runs ([`ApplicationBuilder::workflow_draining`]). `None`: a run on that
    /// version is parked here.
    pub fn workflow_version(&self, id: &str, version: &str) -> Option<&Arc<WorkflowDef>> {
        match self.workflows.get(id) {
            Some((def, _)) if def.version() == version => Some(def),
            _ => self.draining.get(&(id.to_owned(), version.to_owned())),
        }
    }

    /// The versions of workflow `id` this application runs: the current one first, then the
    /// older ones still draining. Empty: the workflow is not declared.
    pub fn workflow_versions(&self, id: &str) -> Vec<&str> {
        let current = self.workflows.get(id).map(|(d, _)| d.version());
        let older =
            self.draining.iter().filter(|((w, _), _)| w == id).map(|((_, v), _)| v.as_str());
        current.into_iter().chain(older).collect()
    }

    /// Why a run of workflow `id` at `version` cannot advance in this application, in words an
    /// operator acts on; `None` when it can.
    pub fn parked_reason(&self, run_id: &str, id: &str, version: &str) -> Option<String> {
        if self.workflow_version(id, version).is_some() {
            return None;
        }
        let registered = self.workflow_versions(id);
        let registered = if registered.is_empty() {
            "no version of it".to_owned()
        } else {
            format!("version {}", registered.join(", "))
        };
        Some(format!(
            "run {run_id} is parked: it started on workflow {id:?} version {version:?}, and this              deployment registers {registered}; nothing advances it until a deployment declares              that version again (ApplicationBuilder::workflow_draining), or an operator deletes              it (jadpo runs delete)"
        ))
    }

    /// How long workflow `id`'s finished runs and idle Sessions are kept.
    pub fn workflow_retention(&self, id: &str) -> WorkflowRetention {
        self.retention.get(id).copied().unwrap_or_default()
    }

    /// How long a Session bound to no run is kept after its last change (`None`: kept).
    pub fn unbound_session_retention(&self) -> Option<std::time::Duration> {
        self.unbound_sessions
    }

    /// Why run `state` cannot advance in this application, if it cannot: unfinished, on a
    /// version it does not declare ([`parked_reason`](Self::parked_reason)). A finished run is
    /// never parked.
    pub fn parked(&self, state: &jadpo_workflow::state::ExecutionState) -> Option<String> {
        if state.status.is_terminal() {
            return None;
        }
        self.parked_reason(&state.run_id, &state.workflow_id, &state.workflow_version)
    }

    /// Who may start workflow `id`.
    pub fn workflow_callers(&self, id: &str) -> Option<&Callers> {
        self.workflow_callers.get(id)
    }

    /// The application's users, if it declares them.
    pub fn users(&self) -> Option<&UserEntity> {
        self.users.as_ref()
    }

    /// The store users' sessions and sign-in requests live in: the user entity's, else the
    /// default store.
    pub fn users_store(&self) -> &str {
        self.users.as_ref().map_or_else(|| self.default_store(), |u| u.store.as_str())
    }

    /// The application's services, if it declares them.
    pub fn services(&self) -> Option<&ServiceEntity> {
        self.services.as_ref()
    }

    /// The store service keys live in: the service entity's, else the default store.
    pub fn services_store(&self) -> &str {
        self.services.as_ref().map_or_else(|| self.default_store(), |s| s.store.as_str())
    }

    /// The stores holding workflow runs.
    pub fn workflow_stores(&self) -> Vec<&str> {
        let mut stores: Vec<&str> = self.workflows.values().map(|(_, s)| s.as_str()).collect();
        stores.sort_unstable();
        stores.dedup();
        stores
    }

    /// The capability `name`.
    pub fn capability(&self, name: &str) -> Option<&Arc<dyn Capability>> {
        self.capabilities.get(name)
    }

    /// Declared connections (external HTTP services), by name.
    pub fn connections(&self) -> &[String] {
        &self.connections
    }

    /// Whether the action or subscriber `name` may make calls: a subscriber declared with a
    /// connection, or a handler declared to call ([`ApplicationBuilder::calls`]).
    pub fn declares_calls(&self, name: &str) -> bool {
        self.calls.contains_key(name)
            || self.subscribers.get(name).is_some_and(|s| s.connection.is_some())
    }

    /// The declared webhook sources, by name.
    pub fn webhooks(&self) -> impl Iterator<Item = &WebhookSource> {
        self.webhooks.values()
    }

    /// The webhook source called `name`.
    pub fn webhook(&self, name: &str) -> Option<&WebhookSource> {
        self.webhooks.get(name)
    }

    /// The declared schedules, by name.
    pub fn schedules(&self) -> impl Iterator<Item = &ScheduleSpec> {
        self.schedules.values()
    }

    /// The schedule called `name`.
    pub fn schedule(&self, name: &str) -> Option<&ScheduleSpec> {
        self.schedules.get(name)
    }

    /// The store holding schedule state: the one named by
    /// [`ApplicationBuilder::schedules_store`], else the default store.
    pub fn schedule_store(&self) -> &str {
        self.schedule_store.as_deref().unwrap_or_else(|| self.default_store())
    }

    /// Every audited entity.
    pub fn audited(&self) -> &[AuditSpec] {
        &self.audited
    }

    /// The audited entities whose tables live in `store`.
    pub fn audited_in(&self, store: &str) -> Vec<&AuditSpec> {
        self.audited.iter().filter(|a| a.store == store).collect()
    }

    /// Whether any audited entity lives in `store` (asked on every commit and delivery, so it
    /// allocates nothing).
    pub fn has_audited(&self, store: &str) -> bool {
        self.audited.iter().any(|a| a.store == store)
    }

    /// Every declared file field.
    pub fn file_fields(&self) -> &[FileField] {
        &self.file_fields
    }

    /// The file fields whose tables live in `store`.
    pub fn file_fields_in(&self, store: &str) -> Vec<&FileField> {
        self.file_fields.iter().filter(|f| f.store == store).collect()
    }

    /// Whether any file field's table lives in `store` (which then keeps `jadpo_files`).
    pub fn keeps_files(&self, store: &str) -> bool {
        self.file_fields.iter().any(|f| f.store == store)
    }

    /// The file field `table.column`.
    pub fn file_field(&self, table: &str, column: &str) -> Option<&FileField> {
        self.file_fields.iter().find(|f| f.table == table && f.column == column)
    }

    /// The audited entity born `entity`.
    pub fn audit_spec(&self, entity: &str) -> Option<&AuditSpec> {
        self.audited.iter().find(|a| a.entity == entity)
    }

    /// The declared flags with their default state.
    pub fn flags(&self) -> impl Iterator<Item = (&String, &Rollout)> {
        self.flags.iter()
    }

    /// Flag `name`'s default state, or `None` when it is not declared.
    pub fn flag_default(&self, name: &str) -> Option<Rollout> {
        self.flags.get(name).copied()
    }

    /// The store holding flags: the one named by [`ApplicationBuilder::flags_store`], else the
    /// default store.
    pub fn flags_store(&self) -> &str {
        self.flags_store.as_deref().unwrap_or_else(|| self.default_store())
    }

    /// How long connection `name`'s provider remembers an idempotency key, where declared: a
    /// step first sent longer ago than this is not sent again.
    pub fn key_window(&self, name: &str) -> Option<std::time::Duration> {
        self.key_windows.get(name).copied()
    }

    /// The breaker thresholds of connection `name`, or `None` when no such connection is
    /// declared.
    pub fn breaker_policy(&self, name: &str) -> Option<BreakerPolicy> {
        self.connections
            .iter()
            .any(|c| c == name)
            .then(|| self.breakers.get(name).copied().unwrap_or_default())
    }

    /// The application's own workflow-ledger migrations for `store` in `dialect`, in order.
    pub fn migrations_for(&self, store: &str, dialect: Dialect) -> Vec<Migration> {
        self.migrations
            .iter()
            .filter(|(s, d, _)| s == store && *d == dialect)
            .map(|(_, _, m)| m.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests;
