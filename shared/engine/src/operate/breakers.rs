//! `jadpo breakers open | close`: operators force a connection's breakers, in every store of the
//! engine, each change recorded in `jadpo_operator_actions` with the breaker's state before it.

use chrono::{DateTime, Utc};

use jadpo_core::model::breaker::{Breaker, BreakerPolicy, State, ms, plus};
use jadpo_core::model::operator::OperatorAction;
use jadpo_core::{Store, StoreError};

use crate::context::Engine;
use crate::operate::{Change, Operator};

/// Why an operator's change to a breaker was refused; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum BreakerOpError {
    /// No such connection is declared.
    #[error("no connection named {0:?} is declared")]
    UnknownConnection(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a forced change did in one store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forced {
    pub store: String,
    /// Whether the breaker changed (`false`: it was already in that state; nothing recorded).
    pub changed: bool,
    /// Held deliveries released (closing).
    pub released: u64,
}

/// Operator verbs over breakers.
pub struct BreakerOps<'a> {
    engine: &'a Engine,
    operator: &'a Operator,
}

impl<'a> BreakerOps<'a> {
    /// Verbs acting as `operator`.
    pub fn new(engine: &'a Engine, operator: &'a Operator) -> Self {
        Self { engine, operator }
    }

    /// Opens `connection`'s breakers: its deliveries are held for the policy's longest pause,
    /// then probed as usual.
    pub async fn open(&self, connection: &str) -> Result<Vec<Forced>, BreakerOpError> {
        self.force(connection, true).await
    }

    /// Closes `connection`'s breakers and releases their held deliveries.
    pub async fn close(&self, connection: &str) -> Result<Vec<Forced>, BreakerOpError> {
        self.force(connection, false).await
    }

    async fn force(&self, connection: &str, open: bool) -> Result<Vec<Forced>, BreakerOpError> {
        let policy = self
            .engine
            .app
            .breaker_policy(connection)
            .ok_or_else(|| BreakerOpError::UnknownConnection(connection.to_owned()))?;
        let mut out = Vec::new();
        for store in self.engine.stores.values() {
            let mut change =
                Change::begin(store.as_ref(), self.operator, self.engine.clock.as_ref()).await?;
            let result = force_in(store.as_ref(), &mut change, connection, open, &policy).await;
            out.push(change.finish(result).await?);
            self.engine.breakers_seen.forget(store.name(), connection);
        }
        Ok(out)
    }
}

/// Forces `connection`'s breaker in `store` open or closed inside `change`.
async fn force_in(
    store: &dyn Store,
    change: &mut Change<'_>,
    connection: &str,
    open: bool,
    policy: &BreakerPolicy,
) -> Result<Forced, StoreError> {
    let now = change.now();
    let b = store.breaker_lock(change.tx(), connection, now).await?;
    let target = if open { opened(&b, now, policy) } else { Breaker::closed(connection) };
    let changed = (b.state == State::Closed) == open;
    let mut released = 0;
    if changed {
        change
            .record(&OperatorAction {
                action: if open { "breaker.open" } else { "breaker.close" },
                item_kind: "breaker",
                item: &b.connection,
                item_state: state_json(store.name(), &b),
                detail: None,
            })
            .await?;
        store.breaker_write(change.tx(), &target, now).await?;
        if !open {
            released = store.breaker_release_held(change.tx(), connection, now).await?.len() as u64;
        }
    }
    Ok(Forced { store: store.name().to_owned(), changed, released })
}

fn opened(b: &Breaker, now: DateTime<Utc>, policy: &BreakerPolicy) -> Breaker {
    let pause_ms = ms(policy.max_pause);
    Breaker {
        state: State::Open,
        opened_at: Some(now),
        pause_ms,
        reopen_at: Some(plus(now, pause_ms)),
        probe_delivery: None,
        probe_started_at: None,
        alert_at: Some(plus(now, ms(policy.alert_after))),
        alert_raised_at: None,
        ..b.clone()
    }
}

/// A breaker as operators see it (and as recorded with an action).
pub fn state_json(store: &str, b: &Breaker) -> serde_json::Value {
    let t = |v: Option<DateTime<Utc>>| v.map(|t| t.to_rfc3339());
    serde_json::json!({
        "store": store,
        "connection": b.connection,
        "state": b.state.as_str(),
        "failures": b.failures,
        "opened_at": t(b.opened_at),
        "pause_ms": b.pause_ms,
        "reopen_at": t(b.reopen_at),
        "probe_delivery": b.probe_delivery,
        "alert_raised_at": t(b.alert_raised_at),
    })
}
