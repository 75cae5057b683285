//! Keyed state through the engine, on both adapters: an advance writes the state with its events
//! and sends their deliveries; a stale or lost claim writes and emits nothing; bad input is
//! refused before any write.

use std::time::Duration as StdDuration;

use chrono::Duration;
use jadpo_application::Emitted;
use jadpo_core::model::lease::StateClaim;
use jadpo_engine::EngineSettings;
use jadpo_engine::services::state::{self, Advanced, StateError};
use jadpo_test_env::{Env, Kind};
use serde_json::json;

use crate::state_app::{app, emitted};

const TTL: StdDuration = StdDuration::from_secs(30);

fn changed(n: i64) -> Vec<Emitted> {
    vec![Emitted { event_type: "rates.changed".into(), payload: json!({"n": n}) }]
}

async fn env(kind: Kind) -> Env {
    Env::new(kind, app(), EngineSettings::default()).await
}

/// Advances `claim` to cursor `n`, emitting one `rates.changed`.
async fn advance(env: &Env, claim: &StateClaim, n: i64) -> Result<Advanced, StateError> {
    let value = json!({"cursor": n});
    state::advance(&env.engine, "main", claim, &value, &changed(n), "poll:rates").await
}

async fn claim(env: &Env, owner: &str) -> Option<StateClaim> {
    state::claim(&env.engine, "main", "poll", "rates", owner, TTL)
        .await
        .unwrap_or_else(|e| panic!("claim: {e}"))
}

async fn advancing_writes_the_state_with_its_events(kind: Kind) {
    let env = env(kind).await;
    let first = claim(&env, "a").await.unwrap_or_else(|| panic!("a free row was refused"));
    assert_eq!(state::value(&first).ok().flatten(), None, "a new row has no value");
    assert!(claim(&env, "b").await.is_none(), "a held row was claimed by another");
    let Ok(Advanced::Written { claim: held, outbox_ids }) = advance(&env, &first, 1).await else {
        panic!("the first advance was not written")
    };
    assert_eq!((held.version, outbox_ids.len()), (1, 1));
    let Ok(Advanced::Written { claim: held, .. }) = advance(&env, &held, 2).await else {
        panic!("the second advance was not written")
    };
    let stale = advance(&env, &first, 9).await;
    assert_eq!(stale.ok(), Some(Advanced::Stale { version: 2 }));
    assert_eq!(emitted(&env).await, (2, 2), "two advances, two events, one per version");
    let sent = "SELECT count(*) AS n FROM jadpo_deliveries WHERE enqueued_at IS NOT NULL";
    assert_eq!(env.count("main", sent).await, 2, "each event's delivery was sent after commit");
    assert!(state::release(&env.engine, "main", &held).await.unwrap_or(false));
    let next = claim(&env, "b").await.unwrap_or_else(|| panic!("a released row was refused"));
    assert_eq!(state::value(&next).ok().flatten(), Some(json!({"cursor": 2})));
    assert_eq!(next.generation, 2);
}

async fn a_lost_claim_emits_nothing(kind: Kind) {
    let env = env(kind).await;
    let a = claim(&env, "a").await.unwrap_or_else(|| panic!("a free row was refused"));
    env.clock.advance(Duration::seconds(31));
    let b = claim(&env, "b").await.unwrap_or_else(|| panic!("an expired claim was kept"));
    assert_eq!(advance(&env, &a, 1).await.ok(), Some(Advanced::Lost), "the paused holder wrote");
    assert_eq!(emitted(&env).await, (0, 0), "the paused holder's event was emitted");
    assert!(
        !state::release(&env.engine, "main", &a).await.unwrap_or(true),
        "a lost claim released b's"
    );
    let own = advance(&env, &b, 1).await;
    assert!(matches!(own, Ok(Advanced::Written { .. })), "the new holder could not write");
}

async fn refusals_change_nothing(kind: Kind) {
    let env = env(kind).await;
    let engine = &env.engine;
    let bad_kind = state::claim(engine, "main", "", "rates", "a", TTL).await;
    assert!(matches!(bad_kind, Err(StateError::BadName { what: "kind", .. })), "{bad_kind:?}");
    let bad_name = state::claim(engine, "main", "poll", "a\nb", "a", TTL).await;
    assert!(matches!(bad_name, Err(StateError::BadName { what: "name", .. })), "{bad_name:?}");
    let no_ttl = state::claim(engine, "main", "poll", "rates", "a", StdDuration::ZERO).await;
    assert!(matches!(no_ttl, Err(StateError::BadTtl(_))), "{no_ttl:?}");
    let rows = "SELECT count(*) AS n FROM jadpo_keyed_state";
    assert_eq!(env.count("main", rows).await, 0, "a refused claim created a row");
    let held = claim(&env, "a").await.unwrap_or_else(|| panic!("a free row was refused"));
    let undeclared = vec![Emitted { event_type: "rates.unknown".into(), payload: json!({}) }];
    let value = json!({"cursor": 1});
    let refused = state::advance(engine, "main", &held, &value, &undeclared, "poll:rates").await;
    assert!(
        matches!(&refused, Err(StateError::Emit(m)) if m.contains("rates.unknown")),
        "{refused:?}"
    );
    let version = "SELECT count(*) AS n FROM jadpo_keyed_state WHERE version = 0 AND value IS NULL";
    assert_eq!(env.count("main", version).await, 1, "a refused event's state was written");
    assert_eq!(emitted(&env).await, (0, 0));
    // A value kept in a form this build does not read is refused when read, naming the row.
    let newer = "UPDATE jadpo_keyed_state SET value = '{}', encoding = 99";
    env.store("main").execute_once(newer, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(state::release(engine, "main", &held).await.unwrap_or(false));
    let read = claim(&env, "b").await.unwrap_or_else(|| panic!("a released row was refused"));
    let unreadable = state::value(&read);
    assert!(
        matches!(&unreadable, Err(e @ StateError::Unreadable { .. }) if e.to_string().contains("poll/rates")),
        "{unreadable:?}"
    );
}

jadpo_test_env::both!(
    advancing_writes_the_state_with_its_events,
    a_lost_claim_emits_nothing,
    refusals_change_nothing,
);
