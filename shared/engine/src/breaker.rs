//! A connection's circuit breaker around one delivery attempt: [`admit`] before it (pass, probe
//! or hold), [`settle`] after it, each in one short transaction that locks the breaker row, so
//! concurrent delivery functions share one breaker through the database.
//!
//! A crash between the two leaves nothing stuck: a delivery held, or let through as the probe,
//! by an `admit` whose caller died comes back with its message (a held one when its hold ends,
//! or sooner when the breaker closes and releases it; the probe, which stays its own until it
//! reports, or is presumed lost after the policy's probe timeout so that another delivery may
//! take it); a lost `settle` costs the breaker one attempt's count, never a delivery (its
//! outcome is recorded apart); a close and the release of its held deliveries commit together.
//! The fault points before and after each commit let the crash loops show it.
//!
//! Most attempts change nothing: a closed breaker lets every delivery pass and a success
//! leaves it closed with no failures counted. Both are first tried on the row read without a
//! lock, and skip the transaction (a synced commit on one row every delivery of the connection
//! contends for, twice per delivery) when applying them to what was read changes nothing. A
//! change committed meanwhile by another delivery is then ordered after this one, as it could
//! have been anyway. A success after such a pass is applied to the row its pass read, with no
//! second read: ordered right after its own pass, it changes nothing either.
//!
//! A process that last saw a connection's breaker closed with no failures counted, and has seen
//! nothing else of it since, trusts that for a moment ([`ClosedSeen`], the engine's
//! `breaker_trusted_for`, 1 s by default) and passes its deliveries with no read at all: the
//! read was a round trip on every calling delivery. What it costs is bounded by the moment: a
//! breaker another process opened is seen here that much later, so a few more attempts reach
//! the failing service before this process holds its deliveries too. Any attempt of this
//! process's own that is not a plain success forgets what it saw, so its own failures are
//! counted on the row as before and the next delivery reads it again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use jadpo_core::model::breaker::{AttemptResult, Breaker, BreakerPolicy, Gate, State, Transition};
use jadpo_core::{Store, StoreError};

/// The breakers this process last saw closed with no failures counted, by store and connection,
/// with when it saw them: its own memory, shared by its workers, never persisted.
#[derive(Debug, Default)]
pub struct ClosedSeen(Mutex<HashMap<StoreConnection, (Breaker, DateTime<Utc>)>>);

/// A store's name and a connection's.
type StoreConnection = (String, String);

impl ClosedSeen {
    /// The closed row last seen for `connection` in `store`, if it was seen less than
    /// `trusted_for` before `now`.
    pub fn closed(
        &self,
        store: &str,
        connection: &str,
        now: DateTime<Utc>,
        trusted_for: Duration,
    ) -> Option<Breaker> {
        let seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (breaker, at) = seen.get(&(store.to_owned(), connection.to_owned()))?;
        let age = (now - *at).to_std().unwrap_or(Duration::ZERO);
        (age < trusted_for).then(|| breaker.clone())
    }

    /// Remembers `breaker` as seen in `store` at `now` when it is closed with no failures
    /// counted; forgets its connection otherwise.
    pub fn note(&self, store: &str, breaker: &Breaker, now: DateTime<Utc>) {
        let key = (store.to_owned(), breaker.connection.clone());
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if breaker.state == State::Closed && breaker.failures == 0 {
            seen.insert(key, (breaker.clone(), now));
        } else {
            seen.remove(&key);
        }
    }

    /// Forgets what was seen of `connection` in `store`: the next delivery reads its row.
    pub fn forget(&self, store: &str, connection: &str) {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        seen.remove(&(store.to_owned(), connection.to_owned()));
    }
}

/// Runs the gate for `delivery` on `connection` in `store`, in one short transaction that
/// locks the breaker row, and holds the delivery when the gate says so. A pass decided on the
/// row read without a lock comes with that row, for [`settle`].
pub async fn admit(
    store: &dyn Store,
    connection: &str,
    delivery: &str,
    now: DateTime<Utc>,
    policy: &BreakerPolicy,
) -> Result<(Gate, Option<Breaker>), StoreError> {
    if let Some(mut breaker) = store.breaker_get(connection).await? {
        let before = breaker.clone();
        if breaker.gate(delivery, now, policy) == Gate::Pass && breaker == before {
            return Ok((Gate::Pass, Some(before)));
        }
    }
    let mut tx = store.begin().await?;
    let mut breaker = store.breaker_lock(tx.as_mut(), connection, now).await?;
    let before = breaker.clone();
    let gate = breaker.gate(delivery, now, policy);
    if breaker != before {
        store.breaker_write(tx.as_mut(), &breaker, now).await?;
    }
    match &gate {
        Gate::Hold { until } => {
            store.delivery_hold(tx.as_mut(), delivery, connection, now, *until).await?;
        }
        Gate::Probe => store.delivery_unhold(tx.as_mut(), delivery).await?,
        Gate::Pass => {}
    }
    crate::fault!("breaker.before_admit_commit");
    tx.commit().await?;
    crate::fault!("breaker.after_admit_commit");
    Ok((gate, None))
}

/// Records `delivery`'s result on `connection`'s breaker in `store`; on closing, releases the
/// held deliveries in the same transaction and returns how many. `passed_on`: the row its pass
/// was decided on without a lock, if it was.
pub async fn settle(
    store: &dyn Store,
    at: (&str, &str),
    result: AttemptResult,
    passed_on: Option<&Breaker>,
    now: DateTime<Utc>,
    policy: &BreakerPolicy,
) -> Result<(Transition, u64), StoreError> {
    let (connection, delivery) = at;
    if let (AttemptResult::Success, Some(seen)) = (result, passed_on) {
        let mut breaker = seen.clone();
        if breaker.record(delivery, result, now, policy) == Transition::None && &breaker == seen {
            return Ok((Transition::None, 0));
        }
    }
    if let Some(mut breaker) = store.breaker_get(connection).await? {
        let before = breaker.clone();
        let transition = breaker.record(delivery, result, now, policy);
        if transition == Transition::None && breaker == before {
            return Ok((Transition::None, 0));
        }
    }
    let mut tx = store.begin().await?;
    let mut breaker = store.breaker_lock(tx.as_mut(), connection, now).await?;
    let before = breaker.clone();
    let transition = breaker.record(delivery, result, now, policy);
    if breaker != before {
        store.breaker_write(tx.as_mut(), &breaker, now).await?;
    }
    let released = if transition == Transition::Closed {
        store.breaker_release_held(tx.as_mut(), connection, now).await?.len() as u64
    } else {
        0
    };
    crate::fault!("breaker.before_settle_commit");
    tx.commit().await?;
    crate::fault!("breaker.after_settle_commit");
    match transition {
        Transition::Opened => tracing::warn!(
            store = store.name(),
            connection,
            failures = breaker.failures,
            "circuit breaker opened; deliveries calling it are held"
        ),
        Transition::Reopened => tracing::warn!(
            store = store.name(),
            connection,
            pause_ms = breaker.pause_ms,
            "probe failed; circuit breaker paused again"
        ),
        Transition::Closed => tracing::info!(
            store = store.name(),
            connection,
            released,
            "probe succeeded; circuit breaker closed and held deliveries released"
        ),
        Transition::None => {}
    }
    Ok((transition, released))
}
