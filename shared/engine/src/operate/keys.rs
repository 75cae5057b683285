//! `jadpo keys issue | list | revoke | rotate`: service keys as operators manage them. Each change
//! is made through [`Change`], so it is recorded in `jadpo_operator_actions` (the key's state
//! before it, the operator, the database role) in the same transaction, or not made at all.
//! Keys live in the services' store (the service entity's, else the default store); with a
//! service entity declared, a key is issued (or rotated) only for a service its table holds.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::model::service_key::{IssuedKey, KeyError, KeyInfo, Scope, Scopes, valid_service};
use jadpo_core::{Store, StoreError};
use serde_json::{Value, json};

use crate::context::Engine;
use crate::operate::{Change, Operator};

/// Why a key operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum KeyOpError {
    /// The service name or a scope is unusable.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A scope names an action the application does not declare.
    #[error("scope action:{name} names no declared action (actions: {declared})")]
    UnknownAction {
        name: String,
        /// The declared actions.
        declared: String,
    },
    /// The application declares its services, and none has this name.
    #[error(
        "no service is named {0:?} (the service entity's table holds the services keys are for)"
    )]
    UnknownService(String),
    /// No key has this id.
    #[error("no service key has id {0:?}")]
    NotFound(String),
    /// The key is revoked already.
    #[error("service key {0} is revoked already")]
    Revoked(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an operator action records about a key: everything but its secret and verifier.
fn state(k: &KeyInfo) -> Value {
    let time = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339());
    json!({
        "service": k.service, "scopes": k.scopes.to_stored(), "issued_at": k.issued_at.to_rfc3339(),
        "expires_at": time(k.expires_at), "revoked_at": time(k.revoked_at),
    })
}

/// Service keys as operators see and change them.
pub struct KeyOps<'a> {
    engine: &'a Engine,
}

impl<'a> KeyOps<'a> {
    /// The keys of `engine`'s application (in its services' store).
    pub fn new(engine: &'a Engine) -> Self {
        Self { engine }
    }

    fn store(&self) -> Result<Arc<dyn Store>, KeyOpError> {
        Ok(Arc::clone(self.engine.store(self.engine.app.services_store())?))
    }

    /// Refuses a service the application's service entity does not hold (read in `change`'s
    /// transaction, so the row cannot vanish between the check and the key).
    async fn check_service(
        &self,
        change: &mut Change<'_>,
        service: &str,
    ) -> Result<(), KeyOpError> {
        let Some(services) = self.engine.app.services() else { return Ok(()) };
        let sql = services.record().find_by_id_sql();
        match change.tx().query_opt(&sql, &[service.into()]).await? {
            Some(_) => Ok(()),
            None => Err(KeyOpError::UnknownService(service.to_owned())),
        }
    }

    /// Refuses a scope naming an action the application does not declare.
    pub fn check_scopes(&self, scopes: &Scopes) -> Result<(), KeyOpError> {
        let unknown = scopes.iter().find_map(|scope| match scope {
            Scope::Action(name) if self.engine.app.action(name).is_none() => Some(name.clone()),
            _ => None,
        });
        match unknown {
            Some(name) => Err(KeyOpError::UnknownAction {
                name,
                declared: self.engine.app.action_names().collect::<Vec<_>>().join(", "),
            }),
            None => Ok(()),
        }
    }

    /// Issues a key for `service` as `operator`; the secret is in the result, shown once.
    pub async fn issue(
        &self,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        scopes: &Scopes,
        operator: &Operator,
    ) -> Result<IssuedKey, KeyOpError> {
        self.check_scopes(scopes)?;
        let store = self.store()?;
        let clock = self.engine.clock.as_ref();
        let mut change = Change::begin(store.as_ref(), operator, clock).await?;
        let result = async {
            valid(service)?;
            self.check_service(&mut change, service).await?;
            let key =
                store.service_key_issue(change.tx(), service, expires_at, scopes, clock).await?;
            let detail = format!("service {service}, scopes {scopes}");
            change.record(&action("keys.issue", &key.id, Value::Null, detail)).await?;
            Ok(key)
        }
        .await;
        change.finish(result).await
    }

    /// The local process's key for service `local`, issued as `operator` at each start (added to
    /// the application's service table first, when it declares one): every declared action,
    /// runs and Sessions (and files, where the application takes uploads), each named rather than
    /// `*`, so the key shows what a scoped key looks like.
    pub async fn issue_local(&self, operator: &Operator) -> Result<IssuedKey, KeyOpError> {
        const LOCAL: &str = "local";
        if let Some(services) = self.engine.app.services() {
            let sql = services.insert_if_missing_sql();
            self.store()?.execute_once(&sql, &[LOCAL.into()]).await?;
        }
        let mut scopes: Vec<String> =
            self.engine.app.action_names().map(|a| format!("action:{a}")).collect();
        scopes.extend(["runs".to_owned(), "sessions".to_owned()]);
        if !self.engine.app.file_fields().is_empty() {
            scopes.push("files".to_owned());
        }
        self.issue(LOCAL, None, &Scopes::parse(&scopes)?, operator).await
    }

    /// Every key, newest first, without secrets.
    pub async fn list(&self) -> Result<Vec<KeyInfo>, KeyOpError> {
        Ok(self.store()?.service_keys_list().await?)
    }

    /// Revokes key `id` as `operator`: it authenticates nobody from now on.
    pub async fn revoke(&self, id: &str, operator: &Operator) -> Result<KeyInfo, KeyOpError> {
        let store = self.store()?;
        let mut change =
            Change::begin(store.as_ref(), operator, self.engine.clock.as_ref()).await?;
        let result = async {
            let before = live(store.service_key_get(change.tx(), id).await?, id)?;
            let now = change.now();
            store.service_key_revoke(change.tx(), id, now).await?;
            change.record(&action("keys.revoke", id, state(&before), String::new())).await?;
            Ok(KeyInfo { revoked_at: Some(now), ..before })
        }
        .await;
        change.finish(result).await
    }

    /// Replaces key `id` as `operator` with a new key for the same service, scopes and expiry,
    /// and revokes the old one, in one transaction; the new secret is in the result, shown once.
    pub async fn rotate(&self, id: &str, operator: &Operator) -> Result<IssuedKey, KeyOpError> {
        let store = self.store()?;
        let clock = self.engine.clock.as_ref();
        let mut change = Change::begin(store.as_ref(), operator, clock).await?;
        let result = async {
            let old = live(store.service_key_get(change.tx(), id).await?, id)?;
            self.check_service(&mut change, &old.service).await?;
            let key = store
                .service_key_issue(change.tx(), &old.service, old.expires_at, &old.scopes, clock)
                .await?;
            let now = change.now();
            store.service_key_revoke(change.tx(), id, now).await?;
            let detail = format!("replaced by {}", key.id);
            change.record(&action("keys.rotate", id, state(&old), detail)).await?;
            Ok(key)
        }
        .await;
        change.finish(result).await
    }
}

/// Refuses an unusable service name before any statement interpolates or binds it.
fn valid(service: &str) -> Result<(), KeyError> {
    if valid_service(service) { Ok(()) } else { Err(KeyError::BadService(service.to_owned())) }
}

fn live(key: Option<KeyInfo>, id: &str) -> Result<KeyInfo, KeyOpError> {
    let key = key.ok_or_else(|| KeyOpError::NotFound(id.to_owned()))?;
    if key.revoked_at.is_some() { Err(KeyOpError::Revoked(id.to_owned())) } else { Ok(key) }
}

fn action<'a>(name: &'a str, id: &'a str, before: Value, detail: String) -> OperatorAction<'a> {
    OperatorAction {
        action: name,
        item_kind: "service_key",
        item: id,
        item_state: before,
        detail: (!detail.is_empty()).then_some(detail),
    }
}

/// Issues a key in a transaction of its own, with no operator record: for fixtures and tests.
/// Operators issue through [`KeyOps::issue`], which records who did.
pub async fn issue_unrecorded(
    store: &dyn Store,
    service: &str,
    expires_at: Option<DateTime<Utc>>,
    scopes: &Scopes,
    clock: &dyn jadpo_core::Clock,
) -> Result<IssuedKey, KeyError> {
    let mut tx = store.begin().await?;
    let result = store.service_key_issue(tx.as_mut(), service, expires_at, scopes, clock).await;
    jadpo_core::commit_or_rollback(tx, result).await
}
