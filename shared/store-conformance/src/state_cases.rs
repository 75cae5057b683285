//! Conformance cases for keyed state, the built-in services' primitive: one claimer among many,
//! a stale or lost claim writes nothing, and the state commits or rolls back with the outbox.

use chrono::Duration;
use jadpo_core::Store;
use jadpo_core::model::lease::StateClaim;

use crate::Fixture;
use crate::cases::{migrated, ok, race};
use crate::pipeline_cases::{delivery, event, t0};

const JSON: i16 = 1;

async fn write(
    store: &dyn Store,
    claim: &StateClaim,
    value: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> bool {
    let mut tx = ok(store.begin().await, "begin");
    let written = ok(store.state_write(tx.as_mut(), claim, value, JSON, at).await, "write");
    ok(tx.commit().await, "commit");
    written
}

/// Twenty claimers at once, each on its own connection and thread: exactly one wins, and the
/// row it claimed was created once.
pub async fn keyed_state_has_one_claimer_among_twenty(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let ttl = Duration::seconds(30);
    let stores: Vec<_> = (0..20).map(|_| fx.open()).collect();
    let claims = race(stores, |i, s| async move {
        ok(s.state_claim("poll", "rates", &format!("w{i}"), t0(), ttl).await, "claim")
    })
    .await;
    let winners: Vec<&StateClaim> = claims.iter().flatten().collect();
    assert_eq!(winners.len(), 1, "twenty claimers at once must have one winner: {winners:?}");
    let winner = winners[0];
    assert_eq!((winner.generation, winner.version, winner.value.as_deref()), (1, 0, None));
    let row = ok(store.state_get("poll", "rates").await, "get");
    let row = row.unwrap_or_else(|| panic!("the claimed row is missing"));
    assert_eq!(row.lease_owner.as_deref(), Some(winner.owner.as_str()));
    assert_eq!(ok(store.states_list("poll", 10).await, "list").len(), 1);
    // Other kinds and names are other rows, claimed independently.
    let other = ok(store.state_claim("grant", "rates", "x", t0(), ttl).await, "claim");
    assert!(other.is_some(), "a row of another kind was held by the winner's lease");
}

/// A holder paused past its expiry loses its claim: its write is refused after another claimed
/// the row, its extension and release too; a second write from the same read is refused by the
/// version; the generation grows with every claim and the version with every write.
pub async fn a_lost_or_stale_claim_writes_nothing(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let ttl = Duration::seconds(30);
    let claim = |owner: &'static str, at| {
        let store = store.clone();
        async move { ok(store.state_claim("grant", "mailer", owner, at, ttl).await, owner) }
    };
    let a = claim("a", t0()).await.unwrap_or_else(|| panic!("a free row was refused"));
    assert!(claim("b", t0() + Duration::seconds(10)).await.is_none(), "a held row was claimed");
    assert!(write(store.as_ref(), &a, r#"{"n":1}"#, t0() + Duration::seconds(1)).await);
    assert!(
        !write(store.as_ref(), &a, r#"{"n":2}"#, t0() + Duration::seconds(2)).await,
        "a second write from the same read passed the compare-and-set"
    );
    let a = ok(store.state_extend(&a, t0() + Duration::seconds(20), ttl).await, "extend");
    let a = a.unwrap_or_else(|| panic!("a live claim could not be extended"));
    let later = t0() + Duration::seconds(60);
    let b =
        claim("b", later).await.unwrap_or_else(|| panic!("an expired claim was not taken over"));
    assert_eq!((b.generation, b.version, b.value.as_deref()), (2, 1, Some(r#"{"n":1}"#)));
    let a_fresh = StateClaim { version: 1, ..a.clone() };
    assert!(
        !write(store.as_ref(), &a_fresh, r#"{"n":"a"}"#, later).await,
        "the paused holder wrote under a lease another holds"
    );
    assert!(
        ok(store.state_extend(&a, later, ttl).await, "extend").is_none(),
        "a lost claim was extended"
    );
    assert!(!ok(store.state_release(&a).await, "release"), "a lost claim released the new one");
    assert!(write(store.as_ref(), &b, r#"{"n":"b"}"#, later).await);
    let row = ok(store.state_get("grant", "mailer").await, "get");
    let row = row.unwrap_or_else(|| panic!("the row is missing"));
    assert_eq!(
        (row.version, row.value.as_deref(), row.encoding),
        (2, Some(r#"{"n":"b"}"#), Some(1))
    );
    // Past its own expiry, even the latest holder cannot write.
    let b2 = StateClaim { version: 2, ..b.clone() };
    assert!(
        !write(store.as_ref(), &b2, "{}", later + Duration::seconds(31)).await,
        "an expired claim wrote"
    );
    assert!(ok(store.state_release(&b).await, "release"));
    let c = claim("c", later).await.map(|c| (c.generation, c.version));
    assert_eq!(c, Some((3, 2)), "a released row is claimed at the next generation");
}

/// The state and the events it emits commit together: rolled back, neither is there; committed,
/// both are.
pub async fn keyed_state_commits_with_the_outbox(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let ttl = Duration::seconds(30);
    let c = ok(store.state_claim("poll", "feed", "w", t0(), ttl).await, "claim");
    let c = c.unwrap_or_else(|| panic!("a free row was refused"));
    for commit in [false, true] {
        let mut tx = ok(store.begin().await, "begin");
        assert!(ok(
            store.state_write(tx.as_mut(), &c, r#"{"cursor":7}"#, JSON, t0()).await,
            "write"
        ));
        let deliveries = [delivery("d-state", "e-state", "reserve_stock")];
        ok(store.outbox_append(tx.as_mut(), &event("e-state"), &deliveries).await, "append");
        if commit {
            ok(tx.commit().await, "commit")
        } else {
            ok(tx.rollback().await, "rollback")
        }
        let row = ok(store.state_get("poll", "feed").await, "get");
        let version = row.map(|r| r.version);
        let event = ok(store.delivery_get("d-state").await, "delivery").is_some();
        assert_eq!((version, event), if commit { (Some(1), true) } else { (Some(0), false) });
    }
}

fn receipt(id: &str, key: &str) -> jadpo_core::model::webhook::Receipt {
    jadpo_core::model::webhook::Receipt {
        id: id.to_owned(),
        source: "payments".to_owned(),
        event_key: key.to_owned(),
        action: "mark_paid".to_owned(),
        request_id: format!("req-{id}"),
        received_at: t0(),
        signed_at: Some(t0()),
        headers: r#"{"stripe-signature":"t=1,v1=00"}"#.to_owned(),
        body: b"\x00{\"id\":\"evt_1\"}\xff".to_vec(),
    }
}

/// Twenty claims of one webhook key at once, each in its own transaction on its own connection:
/// one writes its receipt, every other finds that one; a key's receipt reads back byte for byte,
/// and a rolled-back claim leaves the key free.
pub async fn a_webhook_key_is_received_once_among_twenty(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let stores: Vec<_> = (0..20).map(|_| fx.open()).collect();
    let claims = race(stores, |i, s| async move {
        let mut tx = ok(s.begin().await, "begin");
        let kept =
            ok(s.receipt_claim(tx.as_mut(), &receipt(&format!("r{i}"), "evt_1")).await, "claim");
        ok(tx.commit().await, "commit");
        kept.map(|k| k.id)
    })
    .await;
    let written = claims.iter().filter(|c| c.is_none()).count();
    assert_eq!(written, 1, "twenty claims of one key must write one receipt: {claims:?}");
    let kept = ok(store.receipt_get("payments", "evt_1").await, "get");
    let kept = kept.unwrap_or_else(|| panic!("the receipt is missing"));
    assert!(claims.iter().flatten().all(|id| *id == kept.id), "a claim found another receipt");
    let expected = receipt(&kept.id, "evt_1");
    assert_eq!(
        kept,
        jadpo_core::model::webhook::Receipt { request_id: kept.request_id.clone(), ..expected }
    );
    let mut tx = ok(store.begin().await, "begin");
    assert!(
        ok(store.receipt_claim(tx.as_mut(), &receipt("r-back", "evt_2")).await, "claim").is_none()
    );
    ok(tx.rollback().await, "rollback");
    assert!(
        ok(store.receipt_get("payments", "evt_2").await, "get").is_none(),
        "a rolled-back receipt"
    );
}
