//! What an application declares to the runtime: stores, events, actions, subscribers and its own
//! migrations.
//!
//! Declaration errors (a subscriber on an unknown event, a store nobody declared, a name used
//! twice) are reported by [`ApplicationBuilder::build`], naming what is wrong, so a bad
//! declaration stops a process at start rather than at the first request.

mod callers;
mod checks;
mod handlers;
mod retry;
mod services;
mod users;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use handlers::{
    Action, ActionOutput, Call, CallKind, Capability, CapabilityContext, CommandRequest,
    FlagAccess, HandlerContext, HandlerError, RunServices, Subscriber,
};

pub use crate::model::event::{Emitted, Event};
pub use callers::Callers;
pub use retry::RetryPolicy;
pub use services::ServiceEntity;
pub use users::{FirstSignIn, OidcProvider, SignInMail, UserEntity, sign_in_link};

use crate::model::audit::AuditSpec;
use crate::model::breaker::BreakerPolicy;
use crate::model::flags::Rollout;
use crate::model::migrate::Migration;
use crate::model::schedule::ScheduleError;
use crate::model::schedule::{Schedule, ScheduleSpec};
use crate::model::sign_in;
use crate::model::step::StepMode;
use crate::model::workflow::def::WorkflowDef;
use crate::sql::Dialect;
use checks::{check_audit, check_names, check_services, check_stores, check_users};

/// Why an application's declaration was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AppError {
    /// A declaration names an action or subscriber that is not declared.
    #[error("no action or subscriber named {0:?} is declared (single_keyed_call)")]
    UnknownHandler(String),
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
    /// A subscriber calls a connection nobody declared.
    #[error("subscriber {subscriber:?} calls connection {connection:?}, which is not declared")]
    UnknownConnection { subscriber: String, connection: String },
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
    /// A schedule emits an event nobody declared.
    #[error("schedule {schedule:?} emits event {event:?}, which is not declared")]
    ScheduleEvent { schedule: String, event: String },
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
    breakers: BTreeMap<String, BreakerPolicy>,
    key_windows: BTreeMap<String, std::time::Duration>,
    workflows: BTreeMap<String, (Arc<WorkflowDef>, String)>,
    capabilities: BTreeMap<String, Arc<dyn Capability>>,
    migrations: Vec<(String, Dialect, Migration)>,
    schedules: BTreeMap<String, ScheduleSpec>,
    schedule_store: Option<String>,
    flags: BTreeMap<String, Rollout>,
    flags_store: Option<String>,
    audited: Vec<AuditSpec>,
    workflow_callers: BTreeMap<String, Callers>,
    users: Option<UserEntity>,
    services: Option<ServiceEntity>,
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
        ApplicationBuilder {
            app: Application {
                name: name.to_owned(),
                stores: Vec::new(),
                events: Vec::new(),
                actions: BTreeMap::new(),
                subscribers: BTreeMap::new(),
                connections: Vec::new(),
                breakers: BTreeMap::new(),
                key_windows: BTreeMap::new(),
                workflows: BTreeMap::new(),
                capabilities: BTreeMap::new(),
                migrations: Vec::new(),
                schedules: BTreeMap::new(),
                schedule_store: None,
                flags: BTreeMap::new(),
                flags_store: None,
                audited: Vec::new(),
                workflow_callers: BTreeMap::new(),
                users: None,
                services: None,
            },
            actions: Vec::new(),
            subscribers: Vec::new(),
            schedules: Vec::new(),
            duplicate_workflow: None,
            duplicate_flag: None,
            single_calls: Vec::new(),
        }
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

/// Builds an [`Application`]; [`build`](ApplicationBuilder::build) checks the declaration.
pub struct ApplicationBuilder {
    app: Application,
    actions: Vec<ActionSpec>,
    subscribers: Vec<SubscriberSpec>,
    schedules: Vec<Schedule>,
    duplicate_workflow: Option<String>,
    duplicate_flag: Option<String>,
    single_calls: Vec<String>,
}

impl ApplicationBuilder {
    /// Declares a store; the first one declared is the default store.
    #[must_use]
    pub fn store(mut self, name: &str) -> Self {
        self.app.stores.push(name.to_owned());
        self
    }

    /// Declares an event type (e.g. `order.placed`).
    #[must_use]
    pub fn event(mut self, event_type: &str) -> Self {
        self.app.events.push(event_type.to_owned());
        self
    }

    /// Declares an action running on `store`, callable by services ([`Callers::services`]).
    #[must_use]
    pub fn action(self, name: &str, store: &str, handler: impl Action + 'static) -> Self {
        self.action_for(name, store, Callers::services(), handler)
    }

    /// Declares an action running on `store` that `callers` may call.
    #[must_use]
    pub fn action_for(
        mut self,
        name: &str,
        store: &str,
        callers: Callers,
        handler: impl Action + 'static,
    ) -> Self {
        self.actions.push(ActionSpec {
            name: name.to_owned(),
            store: store.to_owned(),
            callers,
            handler: Arc::new(handler),
            steps: StepMode::Recorded,
        });
        self
    }

    /// Declares the application's services ([`ServiceEntity`]): keys are then issued only for,
    /// and accepted only from, services its table holds.
    #[must_use]
    pub fn services(mut self, services: ServiceEntity) -> Self {
        self.app.services = Some(services);
        self
    }

    /// Declares the application's users ([`UserEntity`]). With sign-in by email, it also declares
    /// the sign-in mail's event and the runtime's subscriber that sends it.
    #[must_use]
    pub fn users(mut self, users: UserEntity) -> Self {
        if let Some(connection) = &users.mail_connection {
            let mail = SignInMail { connection: connection.clone() };
            self.app.events.push(sign_in::MAIL_EVENT.to_owned());
            self = self.subscriber_via(
                sign_in::MAIL_SUBSCRIBER,
                sign_in::MAIL_EVENT,
                &users.store,
                RetryPolicy::default(),
                connection,
                mail,
            );
        }
        self.app.users = Some(users);
        self
    }

    /// Declares a subscriber of `event` writing `store`, retried by `retry`.
    #[must_use]
    pub fn subscriber(
        mut self,
        name: &str,
        event: &str,
        store: &str,
        retry: RetryPolicy,
        handler: impl Subscriber + 'static,
    ) -> Self {
        self.subscribers.push(SubscriberSpec {
            name: name.to_owned(),
            event: event.to_owned(),
            store: store.to_owned(),
            connection: None,
            retry,
            handler: Arc::new(handler),
            steps: StepMode::Recorded,
        });
        self
    }

    /// Declares a subscriber, like [`subscriber`](Self::subscriber), that calls `connection`:
    /// while that connection's circuit breaker is open, its deliveries are held instead of
    /// attempted.
    #[must_use]
    pub fn subscriber_via(
        mut self,
        name: &str,
        event: &str,
        store: &str,
        retry: RetryPolicy,
        connection: &str,
        handler: impl Subscriber + 'static,
    ) -> Self {
        self = self.subscriber(name, event, store, retry, handler);
        if let Some(last) = self.subscribers.last_mut() {
            last.connection = Some(connection.to_owned());
        }
        self
    }

    /// Declares a connection with its own circuit-breaker thresholds.
    #[must_use]
    pub fn connection_with_breaker(mut self, name: &str, policy: BreakerPolicy) -> Self {
        self.app.breakers.insert(name.to_owned(), policy);
        self.connection(name)
    }

    /// Declares a connection whose provider remembers an idempotency key for `window` (e.g. 24
    /// hours): a step first sent longer ago than that and never answered is not re-sent under
    /// its key; the run stops for an operator instead.
    #[must_use]
    pub fn connection_with_key_window(mut self, name: &str, window: std::time::Duration) -> Self {
        self.app.key_windows.insert(name.to_owned(), window);
        self.connection(name)
    }

    /// Declares that the action or subscriber `name` makes a single keyed changing call: its
    /// record keeps the call's dispatch only (key, when sent), with no request fingerprint and no
    /// sealed answer; a retry sends the same key again, within the connection's key window.
    #[must_use]
    pub fn single_keyed_call(mut self, name: &str) -> Self {
        self.single_calls.push(name.to_owned());
        self
    }

    /// Declares a connection: an external HTTP service handlers call by this name; its base URL
    /// comes from `JADPO_CONNECTION_<NAME>_URL`.
    #[must_use]
    pub fn connection(mut self, name: &str) -> Self {
        self.app.connections.push(name.to_owned());
        self
    }

    /// Declares a workflow whose runs live in `store`, which signed-in users and services may
    /// start ([`Callers::users_and_services`]).
    #[must_use]
    pub fn workflow(self, def: WorkflowDef, store: &str) -> Self {
        self.workflow_for(def, store, Callers::users_and_services())
    }

    /// Declares a workflow whose runs live in `store`, which `callers` may start.
    #[must_use]
    pub fn workflow_for(mut self, def: WorkflowDef, store: &str, callers: Callers) -> Self {
        let id = def.id().to_owned();
        self.app.workflow_callers.insert(id.clone(), callers);
        if self.app.workflows.insert(id.clone(), (Arc::new(def), store.to_owned())).is_some() {
            self.duplicate_workflow.get_or_insert(id);
        }
        self
    }

    /// Declares the capability `name`, which workflow steps and compensations run.
    #[must_use]
    pub fn capability(mut self, name: &str, handler: impl Capability + 'static) -> Self {
        self.app.capabilities.insert(name.to_owned(), Arc::new(handler));
        self
    }

    /// Declares a schedule; its runs emit its event through the schedule store's outbox.
    #[must_use]
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedules.push(schedule);
        self
    }

    /// Declares feature flag `name`, in state `default` until an operator sets it.
    #[must_use]
    pub fn flag(mut self, name: &str, default: Rollout) -> Self {
        if self.app.flags.insert(name.to_owned(), default).is_some() {
            self.duplicate_flag.get_or_insert(name.to_owned());
        }
        self
    }

    /// Declares an audited entity: every change to its table's records is recorded in
    /// `jadpo_audit` by a trigger, in the same transaction.
    #[must_use]
    pub fn audit(mut self, spec: AuditSpec) -> Self {
        self.app.audited.push(spec);
        self
    }

    /// Names the store holding flags (default: the default store).
    #[must_use]
    pub fn flags_store(mut self, store: &str) -> Self {
        self.app.flags_store = Some(store.to_owned());
        self
    }

    /// Names the store holding schedule state (default: the default store).
    #[must_use]
    pub fn schedules_store(mut self, store: &str) -> Self {
        self.app.schedule_store = Some(store.to_owned());
        self
    }

    /// Adds the application's own migrations for `store` in `dialect`, after the built-in ones.
    #[must_use]
    pub fn migrations(mut self, store: &str, dialect: Dialect, list: Vec<Migration>) -> Self {
        self.app.migrations.extend(list.into_iter().map(|m| (store.to_owned(), dialect, m)));
        self
    }

    /// Checks the declaration.
    pub fn build(self) -> Result<Application, AppError> {
        let Self {
            mut app,
            mut actions,
            mut subscribers,
            schedules,
            duplicate_workflow,
            duplicate_flag,
            single_calls,
        } = self;
        if let Some(name) = duplicate_workflow {
            return Err(AppError::Duplicate { kind: "workflow", name });
        }
        if let Some(name) = duplicate_flag {
            return Err(AppError::Duplicate { kind: "flag", name });
        }
        check_names("flag", &app.flags.keys().cloned().collect::<Vec<_>>())?;
        check_stores(&app.stores)?;
        check_names("event", &app.events)?;
        check_names("connection", &app.connections)?;
        if let Some(c) = app.key_windows.keys().find(|c| !app.connections.contains(c)) {
            return Err(AppError::UnknownConnection {
                subscriber: "(key window)".to_owned(),
                connection: c.clone(),
            });
        }
        for name in single_calls {
            let action = actions.iter_mut().find(|a| a.name == name).map(|a| &mut a.steps);
            let subscriber = subscribers.iter_mut().find(|s| s.name == name).map(|s| &mut s.steps);
            match action.or(subscriber) {
                Some(steps) => *steps = StepMode::Dispatch,
                None => return Err(AppError::UnknownHandler(name)),
            }
        }
        let store_known = |what: String, store: &str| {
            if app.stores.iter().any(|s| s == store) {
                Ok(())
            } else {
                Err(AppError::UnknownStore {
                    what,
                    store: store.to_owned(),
                    declared: app.stores.join(", "),
                })
            }
        };
        for a in &actions {
            store_known(format!("action {:?}", a.name), &a.store)?;
        }
        for s in &subscribers {
            store_known(format!("subscriber {:?}", s.name), &s.store)?;
            if let Some(c) = s.connection.as_ref().filter(|c| !app.connections.contains(c)) {
                return Err(AppError::UnknownConnection {
                    subscriber: s.name.clone(),
                    connection: c.clone(),
                });
            }
            if !app.events.contains(&s.event) {
                return Err(AppError::UnknownEvent {
                    subscriber: s.name.clone(),
                    event: s.event.clone(),
                });
            }
        }
        for (store, _, _) in &app.migrations {
            store_known("migrations".to_owned(), store)?;
        }
        for (id, (def, store)) in &app.workflows {
            store_known(format!("workflow {id:?}"), store)?;
            if let Some(missing) =
                def.capabilities().into_iter().find(|c| !app.capabilities.contains_key(*c))
            {
                return Err(AppError::UnknownCapability {
                    workflow: id.clone(),
                    capability: missing.to_owned(),
                });
            }
        }
        if let Some(store) = &app.schedule_store {
            store_known("schedules".to_owned(), store)?;
        }
        if let Some(store) = &app.flags_store {
            store_known("flags".to_owned(), store)?;
        }
        if let Some(users) = &app.users {
            store_known(format!("user entity {:?}", users.entity), &users.store)?;
            check_users(users, &app.connections)?;
        }
        if let Some(services) = &app.services {
            store_known(format!("service entity {:?}", services.entity), &services.store)?;
            check_services(services)?;
        }
        for a in &app.audited {
            store_known(format!("audited entity {:?}", a.entity), &a.store)?;
            check_audit(a)?;
        }
        check_names(
            "audited entity",
            &app.audited.iter().map(|a| a.entity.clone()).collect::<Vec<_>>(),
        )?;
        check_names(
            "schedule",
            &schedules.iter().map(|s| s.name().to_owned()).collect::<Vec<_>>(),
        )?;
        for s in &schedules {
            if !app.events.iter().any(|e| e == s.event()) {
                return Err(AppError::ScheduleEvent {
                    schedule: s.name().to_owned(),
                    event: s.event().to_owned(),
                });
            }
        }
        app.schedules = schedules
            .into_iter()
            .map(|s| s.compile().map(|c| (c.name.clone(), c)))
            .collect::<Result<_, _>>()?;
        check_names("action", &actions.iter().map(|a| a.name.clone()).collect::<Vec<_>>())?;
        check_names("subscriber", &subscribers.iter().map(|s| s.name.clone()).collect::<Vec<_>>())?;
        app.actions = actions.into_iter().map(|a| (a.name.clone(), a)).collect();
        app.subscribers = subscribers.into_iter().map(|s| (s.name.clone(), s)).collect();
        Ok(app)
    }
}

#[cfg(test)]
mod tests;
