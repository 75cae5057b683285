//! Keyed state, the primitive under every built-in service: [`claim`] a row (one holder at a time,
//! under a lease whose generation the database issues), do the work outside any transaction, then
//! [`advance`]: the new value, written only while the claim's lease is still held and the row at
//! the version the claim read, committed in one transaction with the events it emits and their
//! deliveries, which are then sent. A claim that lost its lease, or a second advance from a stale
//! read, writes nothing and emits nothing: [`Advanced::Lost`], [`Advanced::Stale`].

use chrono::{DateTime, Utc};
use serde_json::Value;

use jadpo_application::Emitted;
use jadpo_core::model::encoding::{Kept, UnknownEncoding};
use jadpo_core::model::lease::StateClaim;
use jadpo_core::ports::KeyedStateStore;
use jadpo_core::{StoreError, commit_or_rollback};

use crate::commit::{CommitError, Origin, write_emitted};
use crate::context::Engine;
use crate::relay::enqueue_now;

/// Why a keyed-state operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A kind or name that cannot name a row.
    #[error(
        "a keyed state's {what} must be 1 to 200 characters without control characters, not {value:?}"
    )]
    BadName { what: &'static str, value: String },
    /// The lease's length is out of range.
    #[error("a claim lasts from 1 ms to 1 day, not {0:?}")]
    BadTtl(std::time::Duration),
    /// The stored value is in a form this build does not read.
    #[error("{kind}/{name}: {source}")]
    Unreadable { kind: String, name: String, source: UnknownEncoding },
    /// The stored value is not the JSON its encoding says.
    #[error("{kind}/{name}'s stored value is not JSON: {detail}")]
    Corrupt { kind: String, name: String, detail: String },
    /// An event the new state emits was refused (undeclared, chain too deep).
    #[error("the state's events were refused: {0}")]
    Emit(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an [`advance`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advanced {
    /// Written and committed with its events: the claim as it now stands (its new version and
    /// value), and the events' outbox ids.
    Written { claim: StateClaim, outbox_ids: Vec<String> },
    /// The claim's lease was lost (expired and taken, or given up): nothing written.
    Lost,
    /// Another write came first: the row is at `version`, not the claim's. Nothing written.
    Stale { version: i64 },
}

/// Claims `(kind, name)` in `store` for `owner` for `ttl`; `None` while another holds it.
pub async fn claim(
    engine: &Engine,
    store: &str,
    kind: &str,
    name: &str,
    owner: &str,
    ttl: std::time::Duration,
) -> Result<Option<StateClaim>, StateError> {
    check_name("kind", kind)?;
    check_name("name", name)?;
    let ttl = lease_length(ttl)?;
    let s = engine.store(store)?;
    let claim = s.state_claim(kind, name, owner, engine.clock.now(), ttl).await?;
    crate::fault!("state.after_claim");
    Ok(claim)
}

/// The value a claim read, by its encoding: `None` before the first write.
pub fn value(claim: &StateClaim) -> Result<Option<Value>, StateError> {
    let Some(text) = &claim.value else { return Ok(None) };
    Kept::KeyedState.read(claim.encoding).map_err(|source| StateError::Unreadable {
        kind: claim.kind.clone(),
        name: claim.name.clone(),
        source,
    })?;
    serde_json::from_str(text).map(Some).map_err(|e| StateError::Corrupt {
        kind: claim.kind.clone(),
        name: claim.name.clone(),
        detail: e.to_string(),
    })
}

/// Writes `value` under `claim` in `store`, with the events `emitted` (their source `source`), in
/// one transaction, then sends their deliveries.
pub async fn advance(
    engine: &Engine,
    store: &str,
    claim: &StateClaim,
    value: &Value,
    emitted: &[Emitted],
    source: &str,
) -> Result<Advanced, StateError> {
    let s = engine.store(store)?;
    let now = engine.clock.now();
    let text = value.to_string();
    let form = Kept::KeyedState.current();
    let request = format!("{}/{}@{}", claim.kind, claim.name, claim.version + 1);
    let origin = Origin {
        source,
        depth: 0,
        request_id: Some(&request),
        traceparent: None,
        tracestate: None,
    };
    let mut tx = s.begin().await?;
    let result = async {
        if !s.state_write(tx.as_mut(), claim, &text, form.number, now).await? {
            return Ok(None);
        }
        let written = write_emitted(engine, s.as_ref(), tx.as_mut(), emitted, &origin, now)
            .await
            .map_err(from_commit)?;
        crate::fault!("state.before_commit");
        Ok::<_, StateError>(Some(written))
    }
    .await;
    let Some((outbox_ids, queued)) = commit_or_rollback(tx, result).await? else {
        return refused(s.as_ref(), claim, now).await;
    };
    crate::fault!("state.after_commit");
    enqueue_now(engine, store, &queued).await;
    let claim = StateClaim {
        value: Some(text),
        encoding: Some(i64::from(form.number)),
        version: claim.version + 1,
        ..claim.clone()
    };
    Ok(Advanced::Written { claim, outbox_ids })
}

/// Gives `claim`'s lease up in `store`; `false` when it was already lost.
pub async fn release(engine: &Engine, store: &str, claim: &StateClaim) -> Result<bool, StateError> {
    Ok(engine.store(store)?.state_release(claim).await?)
}

/// Why a write under `claim` was refused, read after the refusal: the lease, or the version.
async fn refused(
    store: &dyn KeyedStateStore,
    claim: &StateClaim,
    now: DateTime<Utc>,
) -> Result<Advanced, StateError> {
    let row = store.state_get(&claim.kind, &claim.name).await?;
    let Some(row) = row else { return Ok(Advanced::Lost) };
    let held = row.lease_owner.as_deref() == Some(claim.owner.as_str())
        && row.lease_generation == claim.generation
        && row.lease_expires_at.is_some_and(|t| t > now);
    if held && row.version != claim.version {
        return Ok(Advanced::Stale { version: row.version });
    }
    Ok(Advanced::Lost)
}

fn from_commit(e: CommitError) -> StateError {
    match e {
        CommitError::Store(e) => StateError::Store(e),
        other => StateError::Emit(other.to_string()),
    }
}

fn check_name(what: &'static str, value: &str) -> Result<(), StateError> {
    let fits = (1..=200).contains(&value.chars().count());
    if fits && !value.chars().any(char::is_control) {
        return Ok(());
    }
    Err(StateError::BadName { what, value: value.to_owned() })
}

fn lease_length(ttl: std::time::Duration) -> Result<chrono::Duration, StateError> {
    let day = std::time::Duration::from_secs(86_400);
    if ttl < std::time::Duration::from_millis(1) || ttl > day {
        return Err(StateError::BadTtl(ttl));
    }
    chrono::Duration::from_std(ttl).map_err(|_| StateError::BadTtl(ttl))
}
