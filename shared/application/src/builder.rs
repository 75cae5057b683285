//! Declaring an application: the builder each declaration goes through, and the checks
//! [`ApplicationBuilder::build`] makes before anything runs.

use super::*;

/// Builds an [`Application`]; [`build`](ApplicationBuilder::build) checks the declaration.
pub struct ApplicationBuilder {
    app: Application,
    actions: Vec<ActionSpec>,
    subscribers: Vec<SubscriberSpec>,
    schedules: Vec<Schedule>,
    duplicate_workflow: Option<String>,
    duplicate_flag: Option<String>,
    single_calls: Vec<String>,
    calls: Vec<(String, Vec<String>)>,
    webhooks: Vec<WebhookSource>,
}

impl ApplicationBuilder {
    /// A declaration of `app` (empty), with nothing declared yet.
    pub(super) fn new(app: Application) -> Self {
        Self {
            app,
            actions: Vec::new(),
            subscribers: Vec::new(),
            schedules: Vec::new(),
            duplicate_workflow: None,
            duplicate_flag: None,
            single_calls: Vec::new(),
            calls: Vec::new(),
            webhooks: Vec::new(),
        }
    }

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
            let added = PasskeyAddedMail { connection: connection.clone() };
            self.app.events.push(sign_in::PASSKEY_ADDED_EVENT.to_owned());
            self = self.subscriber_via(
                sign_in::PASSKEY_ADDED_SUBSCRIBER,
                sign_in::PASSKEY_ADDED_EVENT,
                &users.store,
                RetryPolicy::default(),
                connection,
                added,
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

    /// Declares that the action or subscriber `name` calls `connections` (beyond the connection
    /// a subscriber is declared with, [`subscriber_via`](Self::subscriber_via), which it may call
    /// already). Only a handler declared to call may make calls: its store keeps the step
    /// records the calls are recorded in, and a store no calling handler writes keeps none.
    #[must_use]
    pub fn calls(mut self, name: &str, connections: &[&str]) -> Self {
        let connections = connections.iter().map(|c| (*c).to_owned()).collect();
        self.calls.push((name.to_owned(), connections));
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

    /// Keeps an older version of a workflow declared with [`workflow`](Self::workflow) running:
    /// the runs that started on it finish on its graph, while new runs start on the current
    /// version. A run whose version no deployment declares is parked, never advanced by another
    /// graph. Its store and callers are the current version's.
    #[must_use]
    pub fn workflow_draining(mut self, def: WorkflowDef) -> Self {
        let key = (def.id().to_owned(), def.version().to_owned());
        let name = format!("{}@{}", key.0, key.1);
        if self.app.draining.insert(key, Arc::new(def)).is_some() {
            self.duplicate_workflow.get_or_insert(name);
        }
        self
    }

    /// Keeps workflow `id`'s finished runs and idle Sessions only as long as `retention` says;
    /// housekeeping deletes older ones in batches under its lease.
    #[must_use]
    pub fn workflow_retention(mut self, id: &str, retention: WorkflowRetention) -> Self {
        self.app.retention.insert(id.to_owned(), retention);
        self
    }

    /// Keeps a Session bound to no run only `keep` after its last change; housekeeping deletes
    /// older ones in batches under its lease.
    #[must_use]
    pub fn unbound_session_retention(mut self, keep: std::time::Duration) -> Self {
        self.app.unbound_sessions = Some(keep);
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

    /// Declares a webhook source: its events arrive at `POST /webhooks/{name}` and feed its
    /// action, each once.
    #[must_use]
    pub fn webhook(mut self, source: WebhookSource) -> Self {
        self.webhooks.push(source);
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

    /// Declares a column holding a [`File`](jadpo_core::model::file::File): a trigger keeps
    /// `jadpo_files`' count of the fields holding each file as rows change, and uploads into the
    /// field are held to its size and content types.
    #[must_use]
    pub fn file_field(mut self, field: FileField) -> Self {
        self.app.file_fields.push(field);
        self
    }

    /// Names the store holding flags (with one store declared, that one; with several, required
    /// when a flag is declared).
    #[must_use]
    pub fn flags_store(mut self, store: &str) -> Self {
        self.app.flags_store = Some(store.to_owned());
        self
    }

    /// Names the store holding schedule state (with one store declared, that one; with several,
    /// required when a schedule is declared).
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
            calls,
            webhooks,
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
        for (name, connections) in calls {
            let known = actions.iter().any(|a| a.name == name)
                || subscribers.iter().any(|s| s.name == name);
            if !known {
                return Err(AppError::UnknownHandler(name));
            }
            if let Some(c) = connections.iter().find(|c| !app.connections.contains(c)) {
                return Err(AppError::UnknownConnection {
                    subscriber: name,
                    connection: c.clone(),
                });
            }
            app.calls.entry(name).or_default().extend(connections);
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
        for (id, (_, store)) in &app.workflows {
            store_known(format!("workflow {id:?}"), store)?;
        }
        check_workflows(&app)?;
        let several = app.stores.len() > 1;
        if several && !schedules.is_empty() && app.schedule_store.is_none() {
            return Err(unnamed(&app, "schedules", "schedules_store"));
        }
        if several && !app.flags.is_empty() && app.flags_store.is_none() {
            return Err(unnamed(&app, "flags", "flags_store"));
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
        for f in &app.file_fields {
            store_known(format!("file field {}", f.name()), &f.store)?;
        }
        check_file_fields(&app.file_fields)?;
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
        check_webhooks(&webhooks, &actions)?;
        app.webhooks = webhooks.into_iter().map(|w| (w.name.clone(), w)).collect();
        app.actions = actions.into_iter().map(|a| (a.name.clone(), a)).collect();
        app.subscribers = subscribers.into_iter().map(|s| (s.name.clone(), s)).collect();
        Ok(app)
    }
}

/// Checks each webhook source: its name, that its action is declared, and its limits.
fn check_webhooks(webhooks: &[WebhookSource], actions: &[ActionSpec]) -> Result<(), AppError> {
    check_names("webhook source", &webhooks.iter().map(|w| w.name.clone()).collect::<Vec<_>>())?;
    for w in webhooks {
        let bad = |why: String| Err(AppError::BadWebhook { webhook: w.name.clone(), why });
        if !actions.iter().any(|a| a.name == w.action) {
            return bad(format!("it feeds action {:?}, which is not declared", w.action));
        }
        if !(1..=16 << 20).contains(&w.body_limit) {
            return bad(format!("its body limit is 1 byte to 16 MiB, not {}", w.body_limit));
        }
        let second = std::time::Duration::from_secs(1);
        let (hour, day) = (second * 3600, second * 86_400);
        if w.tolerance < second || w.tolerance > hour {
            return bad(format!("its tolerance is 1 s to 1 h, not {:?}", w.tolerance));
        }
        if !(1..=100_000).contains(&w.rate_per_second) || w.burst == 0 {
            return bad(format!(
                "its rate is 1 to 100000 requests a second with a burst of at least 1, not {} \
                 and {}",
                w.rate_per_second, w.burst
            ));
        }
        if w.retention < day {
            return bad(format!("its receipts are kept at least a day, not {:?}", w.retention));
        }
        let variable = !w.secrets_variable.is_empty()
            && w.secrets_variable
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !variable {
            return bad(format!("{:?} is no environment variable name", w.secrets_variable));
        }
    }
    Ok(())
}

/// A feature that keeps state left without a store among several.
fn unnamed(app: &Application, feature: &'static str, method: &'static str) -> AppError {
    AppError::StoreNotNamed { feature, method, declared: app.stores.join(", ") }
}

/// The longest workflow id and version the stores keep (PostgreSQL's `VARCHAR(255)` and
/// `VARCHAR(50)` columns): longer ones are refused here rather than by a run's first insert.
const WORKFLOW_ID_MAX: usize = 255;
const WORKFLOW_VERSION_MAX: usize = 50;

/// Checks every declared workflow version: its id and version fit the stores, its capabilities
/// are declared, and an older version belongs to a workflow declared as current, under another
/// version.
fn check_workflows(app: &Application) -> Result<(), AppError> {
    let current = app.workflows.values().map(|(d, _)| d);
    for def in current.chain(app.draining.values()) {
        let (id, version) = (def.id(), def.version());
        if id.is_empty() || id.chars().count() > WORKFLOW_ID_MAX {
            return Err(AppError::BadWorkflow(format!(
                "workflow id {id:?} must have 1 to {WORKFLOW_ID_MAX} characters"
            )));
        }
        if version.is_empty() || version.chars().count() > WORKFLOW_VERSION_MAX {
            return Err(AppError::BadWorkflow(format!(
                "workflow {id:?}: version {version:?} must have 1 to {WORKFLOW_VERSION_MAX} \
                 characters"
            )));
        }
        if let Some(missing) =
            def.capabilities().into_iter().find(|c| !app.capabilities.contains_key(*c))
        {
            return Err(AppError::UnknownCapability {
                workflow: id.to_owned(),
                capability: missing.to_owned(),
            });
        }
    }
    if let Some(id) = app.retention.keys().find(|id| !app.workflows.contains_key(*id)) {
        return Err(AppError::BadWorkflow(format!(
            "a retention is declared for workflow {id:?}, which is not declared"
        )));
    }
    for (id, version) in app.draining.keys() {
        match app.workflows.get(id) {
            None => {
                return Err(AppError::BadWorkflow(format!(
                    "workflow {id:?} version {version:?} is declared draining, but no current \
                     version of {id:?} is declared (.workflow)"
                )));
            }
            Some((def, _)) if def.version() == version => {
                return Err(AppError::Duplicate {
                    kind: "workflow",
                    name: format!("{id}@{version}"),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}
