//! Conformance cases for the pipeline role: outbox, deliveries, handled records, idempotency.

use jadpo_core::model::service_key::{Scopes, VerifiedKey};
use jadpo_engine::operate::keys::issue_unrecorded;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use jadpo_core::model::delivery::{DeliveryFilter, DeliveryStatus, NewDelivery, NewEvent, Outcome};
use jadpo_core::{Store, Transaction};
use serde_json::json;

use crate::Fixture;
use crate::cases::{migrated, ok, race};

pub(crate) fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default()
}

pub(crate) fn event(id: &str) -> NewEvent {
    NewEvent {
        id: id.to_owned(),
        event_type: "order.placed".to_owned(),
        payload: json!({"order_id": "o-1", "note": "it's"}),
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned()),
        tracestate: Some("vendor=abc".to_owned()),
        chain_depth: 0,
        source: "place_order".to_owned(),
        request_id: Some("req-1".to_owned()),
        created_at: t0(),
    }
}

pub(crate) fn delivery(id: &str, outbox: &str, subscriber: &str) -> NewDelivery {
    NewDelivery {
        id: id.to_owned(),
        outbox_id: outbox.to_owned(),
        subscriber: subscriber.to_owned(),
        created_at: t0(),
    }
}

async fn append(store: &dyn Store, outbox: &str, ids: &[(&str, &str)], commit: bool) {
    let mut tx = ok(store.begin().await, "begin");
    let deliveries: Vec<_> = ids.iter().map(|(id, sub)| delivery(id, outbox, sub)).collect();
    ok(store.outbox_append(tx.as_mut(), &event(outbox), &deliveries).await, "outbox_append");
    if commit { ok(tx.commit().await, "commit") } else { ok(tx.rollback().await, "rollback") }
}

/// Outbox rows and deliveries commit with the transaction, and read back with their event.
pub async fn outbox_rows_and_deliveries_commit_with_the_transaction(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    append(store.as_ref(), "e-rolled-back", &[("d-0", "reserve_stock")], false).await;
    assert!(ok(store.delivery_get("d-0").await, "get").is_none(), "a rolled-back delivery exists");
    append(store.as_ref(), "e-1", &[("d-1", "reserve_stock"), ("d-2", "send_receipt")], true).await;
    let d = ok(store.delivery_get("d-1").await, "get").unwrap_or_else(|| panic!("d-1 missing"));
    assert_eq!(
        (d.status, d.attempts, d.subscriber.as_str()),
        (DeliveryStatus::Pending, 0, "reserve_stock")
    );
    assert_eq!(d.next_attempt_at, t0());
    assert_eq!(d.event.id, "e-1");
    assert_eq!(d.event.payload, json!({"order_id": "o-1", "note": "it's"}));
    assert_eq!(d.event.event_type, "order.placed");
    assert!(d.traceparent.is_some());
    assert_eq!(d.tracestate.as_deref(), Some("vendor=abc"), "tracestate read back with the event");
    let all = ok(
        store.deliveries_list(&DeliveryFilter { limit: 10, ..DeliveryFilter::default() }).await,
        "list",
    );
    assert_eq!(all.len(), 2);
}

/// Claiming takes due, unclaimed deliveries once, and again only after the lost window.
pub async fn claiming_due_deliveries_takes_each_once(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    append(store.as_ref(), "e-1", &[("d-1", "a"), ("d-2", "b"), ("d-3", "c")], true).await;
    let now = t0() + Duration::seconds(1);
    let first = ok(store.deliveries_claim_due(now, now - Duration::minutes(15), 2).await, "claim");
    assert_eq!(first.len(), 2, "limit honoured");
    assert!(first.iter().all(|q| q.traceparent.is_some()));
    let second =
        ok(store.deliveries_claim_due(now, now - Duration::minutes(15), 10).await, "claim");
    assert_eq!(second.len(), 1, "claimed rows are not claimed again");
    let none = ok(store.deliveries_claim_due(now, now - Duration::minutes(15), 10).await, "claim");
    assert!(none.is_empty());
    let later = now + Duration::minutes(16);
    let lost =
        ok(store.deliveries_claim_due(later, later - Duration::minutes(15), 10).await, "claim");
    assert_eq!(lost.len(), 3, "sent and lost: claimed again after the window");
    let ids: Vec<String> = lost.iter().map(|q| q.id.clone()).collect();
    ok(store.deliveries_unmark_enqueued(&ids[..1]).await, "unmark");
    let retry =
        ok(store.deliveries_claim_due(later, later - Duration::minutes(15), 10).await, "claim");
    assert_eq!(retry.len(), 1, "an unmarked delivery is claimed at once");
}

/// A delivery not yet due is not claimed; marking only stamps first attempts.
pub async fn only_due_deliveries_are_claimed(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    append(store.as_ref(), "e-1", &[("d-1", "a"), ("d-2", "b")], true).await;
    let before = t0() - Duration::seconds(1);
    assert!(ok(store.deliveries_claim_due(before, before, 10).await, "claim").is_empty());
    ok(store.deliveries_mark_enqueued(&["d-1".to_owned()], t0()).await, "mark");
    let now = t0() + Duration::seconds(1);
    let claimed =
        ok(store.deliveries_claim_due(now, now - Duration::minutes(15), 10).await, "claim");
    assert_eq!(claimed.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(), vec!["d-2"]);
    let d1 = ok(store.delivery_get("d-1").await, "get").unwrap_or_else(|| panic!("d-1"));
    assert_eq!(d1.enqueued_at, Some(t0()));
}

/// Outcomes: retry keeps it pending and due later; the last failure makes it dead; a finished
/// delivery is not changed again.
pub async fn outcomes_are_recorded_once(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    append(store.as_ref(), "e-1", &[("d-1", "a"), ("d-2", "b")], true).await;
    let now = t0() + Duration::seconds(5);
    let retry_at = now + Duration::seconds(30);
    let failed =
        Outcome::Failed { failure: "mailer answered 503".to_owned(), retry_at: Some(retry_at) };
    assert!(ok(store.delivery_record_outcome("d-1", &failed, now).await, "retry"));
    let d = ok(store.delivery_get("d-1").await, "get").unwrap_or_else(|| panic!("d-1"));
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Pending, 1));
    assert_eq!(
        (d.next_attempt_at, d.last_failure.as_deref()),
        (retry_at, Some("mailer answered 503"))
    );
    assert_eq!(d.enqueued_at, None);
    let dead = Outcome::Failed { failure: "still 503".to_owned(), retry_at: None };
    assert!(ok(store.delivery_record_outcome("d-1", &dead, now).await, "dead"));
    let d = ok(store.delivery_get("d-1").await, "get").unwrap_or_else(|| panic!("d-1"));
    assert_eq!((d.status, d.attempts, d.finished_at), (DeliveryStatus::Dead, 2, Some(now)));
    assert!(
        !ok(store.delivery_record_outcome("d-1", &Outcome::Handled, now).await, "again"),
        "dead is final"
    );
    assert!(ok(store.delivery_record_outcome("d-2", &Outcome::Handled, now).await, "handled"));
    let handled = ok(
        store
            .deliveries_list(&DeliveryFilter {
                status: Some(DeliveryStatus::Handled),
                limit: 10,
                subscriber: None,
            })
            .await,
        "list",
    );
    assert_eq!(handled.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), vec!["d-2"]);
    let by_sub = DeliveryFilter { subscriber: Some("a".to_owned()), limit: 10, status: None };
    assert_eq!(ok(store.deliveries_list(&by_sub).await, "list").len(), 1);
    assert!(ok(store.delivery_get("nope").await, "get").is_none());
}

/// A handled record is inserted once; the second insert reports it exists.
pub async fn a_handled_record_is_inserted_once(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.handled_insert(tx.as_mut(), "d-1", "a", t0()).await, "insert"));
    ok(tx.commit().await, "commit");
    let mut tx = ok(store.begin().await, "begin");
    assert!(!ok(store.handled_insert(tx.as_mut(), "d-1", "a", t0()).await, "insert again"));
    ok(tx.rollback().await, "rollback");
}

async fn claim(
    store: &dyn Store,
    tx: &mut dyn Transaction,
    key: &str,
    digest: &str,
    now: DateTime<Utc>,
) -> Option<jadpo_core::model::delivery::StoredResponse> {
    ok(
        store.idempotency_claim(tx, "svc", key, digest, now, now + Duration::hours(24)).await,
        "claim",
    )
}

/// An idempotency key is claimed once; its stored response comes back; an expired one is
/// claimable again; a rolled-back claim leaves nothing.
pub async fn idempotency_keys_are_claimed_once_and_expire(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    assert!(claim(store.as_ref(), tx.as_mut(), "k-rolled", "x", t0()).await.is_none());
    ok(tx.rollback().await, "rollback");
    let mut tx = ok(store.begin().await, "begin");
    assert!(
        claim(store.as_ref(), tx.as_mut(), "k-rolled", "x", t0()).await.is_none(),
        "rollback left a key"
    );
    assert!(claim(store.as_ref(), tx.as_mut(), "k1", "digest-1", t0()).await.is_none());
    ok(
        store
            .idempotency_store_response(tx.as_mut(), "svc", "k1", 201, r#"{"order_id":"o-1"}"#)
            .await,
        "store",
    );
    ok(tx.commit().await, "commit");
    let mut tx = ok(store.begin().await, "begin");
    let stored =
        claim(store.as_ref(), tx.as_mut(), "k1", "digest-2", t0() + Duration::hours(1)).await;
    let stored = stored.unwrap_or_else(|| panic!("the key was claimed twice"));
    assert_eq!((stored.request_digest.as_str(), stored.status), ("digest-1", 201));
    assert_eq!(stored.body, r#"{"order_id":"o-1"}"#);
    let other_scope = store
        .idempotency_claim(tx.as_mut(), "other", "k1", "d", t0(), t0() + Duration::hours(1))
        .await;
    assert!(ok(other_scope, "scoped").is_none(), "keys are scoped to the caller");
    ok(tx.rollback().await, "rollback");
    let mut tx = ok(store.begin().await, "begin");
    let expired =
        claim(store.as_ref(), tx.as_mut(), "k1", "digest-3", t0() + Duration::hours(25)).await;
    assert!(expired.is_none(), "an expired key must be claimable again");
    let again =
        claim(store.as_ref(), tx.as_mut(), "k1", "digest-4", t0() + Duration::hours(26)).await;
    let again = again.unwrap_or_else(|| panic!("the reclaimed key was claimed twice"));
    assert_eq!(
        (again.request_digest.as_str(), again.status, again.body.as_str()),
        ("digest-3", 0, ""),
        "an expired key's claim replaces its digest and response"
    );
    ok(tx.rollback().await, "rollback");
}

/// Two relays claiming at once, each on its own connection and thread, never take the same
/// delivery, and both get work.
pub async fn concurrent_claims_are_disjoint(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let ids: Vec<(String, String)> =
        (0..40).map(|i| (format!("d-{i:02}"), format!("s{i}"))).collect();
    let refs: Vec<(&str, &str)> = ids.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    append(store.as_ref(), "e-1", &refs, true).await;
    let (a, b) = (fx.open(), fx.open());
    let now = t0() + Duration::seconds(1);
    let lost = now - Duration::minutes(15);
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let claim_all = |s: Arc<dyn Store>| {
        let barrier = Arc::clone(&barrier);
        tokio::spawn(async move {
            barrier.wait().await;
            let mut got = Vec::new();
            loop {
                let batch = ok(s.deliveries_claim_due(now, lost, 3).await, "claim");
                if batch.is_empty() {
                    return got;
                }
                got.extend(batch.into_iter().map(|q| q.id));
                // A relay's pass sends between claims: the other relay's claim gets its turn.
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        })
    };
    let (ga, gb) = (claim_all(a), claim_all(b));
    let (ga, gb) = (ok(ga.await, "relay a"), ok(gb.await, "relay b"));
    assert!(!ga.is_empty() && !gb.is_empty(), "one relay got nothing: {ga:?} {gb:?}");
    let mut all: Vec<String> = ga.iter().chain(gb.iter()).cloned().collect();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "a delivery was claimed twice");
    assert_eq!(all.len(), 40, "a delivery was never claimed");
}

/// Service keys: verified by their verifier only, never stored in clear; expiry honoured.
pub async fn service_keys_are_stored_as_verifiers(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let clock = jadpo_core::ManualClock::new(t0());
    let scopes = ok(Scopes::parse(&["action:place_order", "runs"]), "scopes");
    let expires = Some(t0() + Duration::hours(1));
    let key =
        ok(issue_unrecorded(store.as_ref(), "shop-web", expires, &scopes, &clock).await, "issue");
    assert!(key.secret.starts_with("jadpo_sk_") && key.secret.len() == 73, "{}", key.secret);
    let found = ok(store.service_key_verify(&key.secret, t0(), None).await, "verify");
    assert_eq!(found, Some(VerifiedKey { service: "shop-web".into(), scopes: scopes.clone() }));
    let mut wrong = key.secret.clone();
    wrong.replace_range(20..21, if &key.secret[20..21] == "0" { "1" } else { "0" });
    assert_eq!(ok(store.service_key_verify(&wrong, t0(), None).await, "verify"), None);
    assert_eq!(ok(store.service_key_verify("Bearer nonsense", t0(), None).await, "verify"), None);
    let later = t0() + Duration::hours(2);
    assert_eq!(
        ok(store.service_key_verify(&key.secret, later, None).await, "verify"),
        None,
        "an expired key worked"
    );
    let mut tx = ok(store.begin().await, "begin");
    let rows =
        ok(tx.query("SELECT id, service, verifier FROM jadpo_service_keys", &[]).await, "select");
    ok(tx.rollback().await, "rollback");
    assert_eq!(rows.len(), 1);
    let verifier = ok(rows[0].get_str("verifier"), "verifier");
    assert_eq!(verifier, jadpo_core::model::service_key::verifier(&key.secret));
    assert!(!verifier.contains(&key.secret[9..]), "the secret is stored");
    let err = issue_unrecorded(store.as_ref(), "bad name!", None, &scopes, &clock).await;
    assert!(
        err.err().map(|e| e.to_string()).unwrap_or_default().contains("service name \"bad name!\"")
    );
    // Listed without secrets; revoked, it authenticates nobody, and revoking again changes nothing.
    let listed = ok(store.service_keys_list().await, "list");
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].id.as_str(), &listed[0].scopes), (key.id.as_str(), &scopes));
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.service_key_revoke(tx.as_mut(), &key.id, t0()).await, "revoke"));
    assert!(!ok(store.service_key_revoke(tx.as_mut(), &key.id, t0()).await, "revoke again"));
    let got = ok(store.service_key_get(tx.as_mut(), &key.id).await, "get");
    ok(tx.commit().await, "commit");
    assert_eq!(got.and_then(|k| k.revoked_at), Some(t0()));
    assert_eq!(
        ok(store.service_key_verify(&key.secret, t0(), None).await, "verify"),
        None,
        "a revoked key worked"
    );
}

/// With the application's service table named, a key is read with its service's record in one
/// statement: once the record is gone, the key authenticates nobody.
pub async fn a_key_is_read_with_its_services_record(fx: &dyn Fixture) {
    use jadpo_core::model::principal::EntityRecord;
    let store = migrated(fx).await;
    let services = EntityRecord { table: "conformance_services", id_column: "name" };
    let ddl = "CREATE TABLE conformance_services (name TEXT PRIMARY KEY)";
    ok(store.execute_once(ddl, &[]).await, "create");
    let insert = "INSERT INTO conformance_services (name) VALUES ('billing')";
    ok(store.execute_once(insert, &[]).await, "insert");
    let clock = jadpo_core::ManualClock::new(t0());
    let scopes = ok(Scopes::parse(&["runs"]), "scopes");
    let billing =
        ok(issue_unrecorded(store.as_ref(), "billing", None, &scopes, &clock).await, "issue");
    let stray = ok(issue_unrecorded(store.as_ref(), "stray", None, &scopes, &clock).await, "issue");
    let find = |secret: String, services| {
        let store = Arc::clone(&store);
        async move { ok(store.service_key_verify(&secret, t0(), services).await, "verify") }
    };
    let found = find(billing.secret.clone(), Some(services)).await;
    assert_eq!(found.map(|k| k.service), Some("billing".to_owned()));
    assert!(
        find(stray.secret.clone(), Some(services)).await.is_none(),
        "a key of no service worked"
    );
    assert!(
        find(stray.secret, None).await.is_some(),
        "without a service table the key alone decides"
    );
    let delete = "DELETE FROM conformance_services WHERE name = 'billing'";
    ok(store.execute_once(delete, &[]).await, "delete");
    assert!(find(billing.secret, Some(services)).await.is_none(), "a deleted service's key worked");
}

/// Users' API tokens: stored as verifiers only; a token works until its end or until its user
/// is signed out everywhere, and another user's sign-out leaves it alone.
pub async fn user_tokens_are_stored_as_verifiers(fx: &dyn Fixture) {
    use jadpo_core::model::user_session::{SessionKind, TokenError};
    use jadpo_engine::operate::tokens::issue_unrecorded as issue;
    let store = migrated(fx).await;
    let clock = jadpo_core::ManualClock::new(t0());
    let until = t0() + Duration::hours(1);
    let alice = ok(issue(store.as_ref(), "alice", until, &clock).await, "issue");
    let bob = ok(issue(store.as_ref(), "bob", until, &clock).await, "issue");
    assert!(alice.secret.starts_with("jadpo_at_") && alice.secret.len() == 73, "{}", alice.secret);
    let verify = |t: &str, at| {
        let store = Arc::clone(&store);
        let t = t.to_owned();
        async move {
            let live = store.user_session_verify(&t, SessionKind::ApiToken, at, None).await;
            ok(live, "verify").map(|s| s.user_id)
        }
    };
    assert_eq!(verify(&alice.secret, t0()).await.as_deref(), Some("alice"));
    assert_eq!(verify(&bob.secret, t0()).await.as_deref(), Some("bob"));
    assert_eq!(verify(&alice.secret.replace("jadpo_at_", "jadpo_sk_"), t0()).await, None);
    assert_eq!(verify(&alice.secret, until).await, None, "a token worked at its end");
    let mut tx = ok(store.begin().await, "begin");
    assert_eq!(ok(store.user_sessions_end(tx.as_mut(), "alice", t0()).await, "end"), 1);
    ok(tx.commit().await, "commit");
    assert_eq!(verify(&alice.secret, t0()).await, None, "a signed-out token worked");
    assert_eq!(
        verify(&bob.secret, t0()).await.as_deref(),
        Some("bob"),
        "another user's token ended"
    );
    let mut tx = ok(store.begin().await, "begin");
    let rows = ok(tx.query("SELECT * FROM jadpo_sessions", &[]).await, "select");
    ok(tx.rollback().await, "rollback");
    for row in &rows {
        for (column, value) in row.columns().iter().zip(row.values()) {
            let text = format!("{value:?}");
            for secret in [&alice.secret, &bob.secret] {
                assert!(!text.contains(&secret[9..]), "{column} holds a token");
            }
        }
    }
    let bad = issue(store.as_ref(), "", until, &clock).await;
    assert!(matches!(bad, Err(TokenError::BadUser(_))), "{bad:?}");
    let dead = issue(store.as_ref(), "carol", t0(), &clock).await;
    assert!(matches!(dead, Err(TokenError::NoLifetime)), "{dead:?}");
    assert_eq!(rows.len(), 2, "a refused issue stored a session");
    // Housekeeping deletes the ended session, not the live one.
    use jadpo_core::model::housekeeping::RecordClass::UserSessions;
    let mut tx = ok(store.begin().await, "begin");
    let later = t0() + Duration::seconds(1);
    let deleted =
        ok(store.housekeeping_delete(tx.as_mut(), UserSessions, later, 100).await, "delete");
    ok(tx.commit().await, "commit");
    assert_eq!(deleted, 1);
    assert_eq!(verify(&bob.secret, t0()).await.as_deref(), Some("bob"));
}

/// The lease primitive: one holder; a holder paused past its expiry loses the lease to another,
/// cannot extend it, and is fenced out of writing; the generation grows with every acquisition.
pub async fn leases_fence_a_holder_paused_past_expiry(fx: &dyn Fixture) {
    use jadpo_core::model::lease::LeaseTable::Housekeeping;
    let store = migrated(fx).await;
    let ttl = Duration::seconds(30);
    let a = ok(store.lease_take(Housekeeping, "hourly", "a", t0(), ttl).await, "take");
    let a = a.unwrap_or_else(|| panic!("a free lease was refused"));
    assert_eq!(a.generation, 1);
    assert!(
        ok(
            store.lease_take(Housekeeping, "hourly", "b", t0() + Duration::seconds(10), ttl).await,
            "take"
        )
        .is_none()
    );
    let a = ok(store.lease_extend(&a, t0() + Duration::seconds(20), ttl).await, "extend");
    let a = a.unwrap_or_else(|| panic!("a live lease could not be extended"));
    // a pauses past its expiry; b takes over.
    let later = t0() + Duration::seconds(60);
    let b = ok(store.lease_take(Housekeeping, "hourly", "b", later, ttl).await, "take over");
    let b = b.unwrap_or_else(|| panic!("an expired lease was not taken over"));
    assert_eq!(b.generation, 2);
    assert!(
        ok(store.lease_extend(&a, later, ttl).await, "extend").is_none(),
        "a lost lease was extended"
    );
    let mut tx = ok(store.begin().await, "begin");
    assert!(
        !ok(store.lease_fence(tx.as_mut(), &a, later).await, "fence"),
        "the paused holder passed the fence"
    );
    ok(tx.rollback().await, "rollback");
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.lease_fence(tx.as_mut(), &b, later).await, "fence"));
    let done = "UPDATE jadpo_housekeeping SET last_completed_at = $2 WHERE name = $1";
    ok(tx.execute(done, &["hourly".into(), later.into()]).await, "write");
    ok(tx.commit().await, "commit");
    assert!(!ok(store.lease_give_up(&a).await, "release"), "a lost lease released the new one");
    assert!(ok(store.lease_give_up(&b).await, "release"));
    let c = ok(store.lease_take(Housekeeping, "hourly", "c", later, ttl).await, "take");
    assert_eq!(c.map(|l| l.generation), Some(3));
    // Two takers at once, each on its own connection and thread, released together.
    let far = later + Duration::minutes(5);
    let owners = ["x", "y"];
    let takers = race(vec![fx.open(), fx.open()], |i, s| async move {
        ok(s.lease_take(Housekeeping, "nightly", owners[i], far, ttl).await, owners[i])
    })
    .await;
    let winners = takers.iter().filter(|l| l.is_some()).count();
    assert_eq!(winners, 1, "two takers at once must have one winner");
}
