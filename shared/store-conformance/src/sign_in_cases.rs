//! Conformance cases for sign-in: requests by address digest with their limits, one-time links
//! and codes, and browser sessions with their CSRF verifier.

use chrono::{DateTime, Duration, Utc};
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_core::model::service_key::verifier;
use jadpo_core::model::sign_in::{
    EmailAddress, Redeemed, SignInError, SignInLimits, code_verifier, new_code, new_link,
};
use jadpo_core::model::user_session::{BrowserLimits, SessionKind};
use jadpo_core::{ManualClock, Store};

use crate::Fixture;
use crate::cases::{migrated, ok, race};

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default()
}

fn digest(address: &str) -> String {
    EmailAddress::parse(address).map(|a| a.digest()).unwrap_or_else(|e| panic!("{e}"))
}

/// Counts a request for `address` at `at` and arms it with a fresh link and code; returns them.
async fn armed(store: &dyn Store, address: &str, at: DateTime<Utc>) -> (String, String) {
    let limits = SignInLimits::default();
    let mut tx = ok(store.begin().await, "begin");
    let requested = store.sign_in_request(tx.as_mut(), &digest(address), at, limits).await;
    let nonce = requested.unwrap_or_else(|e| panic!("request: {e}")).nonce;
    let (link, code) = (new_link(), new_code());
    let (link, code) =
        (link.unwrap_or_else(|e| panic!("{e}")), code.unwrap_or_else(|e| panic!("{e}")));
    let until = at + Duration::minutes(15);
    let (d, lv, cv) = (digest(address), verifier(&link), code_verifier(&nonce, &code));
    let arm = store.sign_in_arm(tx.as_mut(), &d, &nonce, &lv, &cv, until).await;
    assert!(ok(arm, "arm"), "a fresh request was not armed");
    ok(tx.commit().await, "commit");
    (link, code)
}

async fn redeem(
    store: &dyn Store,
    address: &str,
    proof: Result<&str, &str>,
    at: DateTime<Utc>,
) -> Redeemed {
    let mut tx = ok(store.begin().await, "begin");
    let d = digest(address);
    let result = match proof {
        Ok(link) => store.sign_in_redeem_link(tx.as_mut(), &d, link, at).await,
        Err(code) => {
            let limits = SignInLimits { wrong_codes: 5, ..SignInLimits::default() };
            store.sign_in_redeem_code(tx.as_mut(), &d, code, at, limits).await
        }
    };
    ok(tx.commit().await, "commit");
    ok(result, "redeem")
}

/// A link works once, before its end; a newer request replaces it; wrong codes count to a
/// lock-out that stops the link too; a superseded nonce is not armed; five requests an hour per
/// address, then `TooMany` until the hour is over; housekeeping deletes only rows whose link and
/// window are over. The row holds no link or code.
pub async fn sign_in_requests_are_one_time_and_limited(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    let (link, code) = armed(s, "a@example.com", t0()).await;
    assert_eq!(redeem(s, "a@example.com", Ok("jadpo_ml_nope"), t0()).await, Redeemed::NotLive);
    assert_eq!(
        redeem(s, "b@example.com", Ok(&link), t0()).await,
        Redeemed::NotLive,
        "another address"
    );
    assert_eq!(redeem(s, "a@example.com", Ok(&link), t0()).await, Redeemed::SignedIn);
    assert_eq!(redeem(s, "a@example.com", Ok(&link), t0()).await, Redeemed::NotLive, "used twice");
    assert_eq!(
        redeem(s, "a@example.com", Err(&code), t0()).await,
        Redeemed::NotLive,
        "code after link"
    );

    let (old_link, _) = armed(s, "a@example.com", t0()).await;
    let (_, code) = armed(s, "a@example.com", t0()).await;
    assert_eq!(
        redeem(s, "a@example.com", Ok(&old_link), t0()).await,
        Redeemed::NotLive,
        "replaced"
    );
    for left in (0..5).rev() {
        assert_eq!(
            redeem(s, "a@example.com", Err("WRONG000"), t0()).await,
            Redeemed::Wrong { left }
        );
    }
    assert_eq!(redeem(s, "a@example.com", Err(&code), t0()).await, Redeemed::NotLive, "locked");
    armed(s, "a@example.com", t0()).await;
    armed(s, "a@example.com", t0()).await;

    let later = t0() + Duration::minutes(16);
    let mut tx = ok(s.begin().await, "begin");
    let sixth = s
        .sign_in_request(tx.as_mut(), &digest("a@example.com"), later, SignInLimits::default())
        .await;
    assert!(matches!(sixth, Err(SignInError::TooMany)), "{sixth:?}");
    ok(tx.rollback().await, "rollback");
    let (late_link, _) = armed(s, "c@example.com", t0()).await;
    assert_eq!(
        redeem(s, "c@example.com", Ok(&late_link), later).await,
        Redeemed::NotLive,
        "expired"
    );
    let next_hour = t0() + Duration::minutes(61);
    let (link, _) = armed(s, "a@example.com", next_hour).await;

    let mut tx = ok(s.begin().await, "begin");
    let rows = ok(tx.query("SELECT * FROM jadpo_sign_in_requests", &[]).await, "select");
    for row in &rows {
        for (column, value) in row.columns().iter().zip(row.values()) {
            let text = format!("{value:?}");
            assert!(
                !text.contains(&link[9..]) && !text.contains("example.com"),
                "{column}: {text}"
            );
        }
    }
    // As a pass at t0 + 80 min cuts off: c's link and window are over, a's window began at 61.
    let cutoff = t0() + Duration::minutes(20);
    let deleted =
        s.housekeeping_delete(tx.as_mut(), RecordClass::SignInRequests, cutoff, 100).await;
    assert_eq!(ok(deleted, "delete"), 1, "only c's request is over (a's window started anew)");
    let left =
        ok(tx.query("SELECT address_digest FROM jadpo_sign_in_requests", &[]).await, "select");
    ok(tx.commit().await, "commit");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].get_str("address_digest").ok(), Some(digest("a@example.com").as_str()));
}

/// A browser session is found only as a browser session, stores its CSRF token as a verifier,
/// ends after its idle limit unless touched, and ends alone on sign-out.
pub async fn browser_sessions_keep_verifiers_and_end(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let clock = ManualClock::new(t0());
    let limits = BrowserLimits::default();
    let mut tx = ok(store.begin().await, "begin");
    let a = store.browser_session_start(tx.as_mut(), "alice", limits, &clock).await;
    let b = store.browser_session_start(tx.as_mut(), "alice", limits, &clock).await;
    ok(tx.commit().await, "commit");
    let (a, b) = (a.unwrap_or_else(|e| panic!("{e}")), b.unwrap_or_else(|e| panic!("{e}")));
    let find = |token: String, kind, at| {
        let store = std::sync::Arc::clone(&store);
        async move { ok(store.user_session_verify(&token, kind, at, None).await, "verify") }
    };
    let live = find(a.token.clone(), SessionKind::Browser, t0()).await;
    let live = live.unwrap_or_else(|| panic!("a new browser session is not live"));
    assert_eq!((live.user_id.as_str(), live.csrf_verifier), ("alice", Some(verifier(&a.csrf))));
    assert!(find(a.token.clone(), SessionKind::ApiToken, t0()).await.is_none(), "found as a token");
    let idle = t0() + Duration::minutes(31);
    assert!(find(a.token.clone(), SessionKind::Browser, idle).await.is_none(), "idle yet live");
    ok(store.user_session_touch(&a.id, t0() + Duration::minutes(20)).await, "touch");
    assert!(find(a.token.clone(), SessionKind::Browser, idle).await.is_some(), "touched yet ended");
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.user_session_end(tx.as_mut(), &a.id, t0()).await, "end"));
    assert!(!ok(store.user_session_end(tx.as_mut(), &a.id, t0()).await, "end again"));
    let rows = ok(tx.query("SELECT * FROM jadpo_sessions", &[]).await, "select");
    ok(tx.commit().await, "commit");
    assert!(
        find(a.token.clone(), SessionKind::Browser, t0()).await.is_none(),
        "signed out yet live"
    );
    assert!(find(b.token.clone(), SessionKind::Browser, t0()).await.is_some(), "the other ended");
    for row in &rows {
        for (column, value) in row.columns().iter().zip(row.values()) {
            let text = format!("{value:?}");
            for secret in [&a.token, &a.csrf, &b.token, &b.csrf] {
                assert!(!text.contains(&secret[9..]), "{column} holds a secret");
            }
        }
    }
}

/// With the application's user table named, a session is read with its user's record in one
/// statement: once the record is gone, the session authenticates nobody.
pub async fn a_session_is_read_with_its_users_record(fx: &dyn Fixture) {
    use jadpo_core::model::principal::EntityRecord;
    let store = migrated(fx).await;
    let people = EntityRecord { table: "conformance_people", id_column: "person_id" };
    let ddl = "CREATE TABLE conformance_people (person_id TEXT PRIMARY KEY)";
    ok(store.execute_once(ddl, &[]).await, "create");
    ok(
        store
            .execute_once("INSERT INTO conformance_people (person_id) VALUES ('alice')", &[])
            .await,
        "insert",
    );
    let clock = ManualClock::new(t0());
    let mut tx = ok(store.begin().await, "begin");
    let a =
        store.browser_session_start(tx.as_mut(), "alice", BrowserLimits::default(), &clock).await;
    ok(tx.commit().await, "commit");
    let a = a.unwrap_or_else(|e| panic!("{e}"));
    let find = |users| {
        let (store, token) = (std::sync::Arc::clone(&store), a.token.clone());
        async move {
            ok(store.user_session_verify(&token, SessionKind::Browser, t0(), users).await, "verify")
        }
    };
    assert!(find(Some(people)).await.is_some(), "a session of an existing user was refused");
    ok(
        store.execute_once("DELETE FROM conformance_people WHERE person_id = 'alice'", &[]).await,
        "delete",
    );
    assert!(find(Some(people)).await.is_none(), "a deleted user's session still works");
    assert!(find(None).await.is_some(), "without a user table the session alone decides");
}

async fn take(
    store: &dyn Store,
    verifier: &str,
    purpose: jadpo_core::model::passkey::Purpose,
) -> Option<jadpo_core::model::passkey::TakenChallenge> {
    let mut tx = ok(store.begin().await, "begin");
    let taken = ok(store.passkey_challenge_take(tx.as_mut(), verifier, purpose).await, "take");
    ok(tx.commit().await, "commit");
    taken
}

/// A passkey ceremony is taken (deleted) once, by its verifier and purpose, even by two takers
/// at once on their own connections and threads; it keeps its state and encoding; housekeeping deletes only expired ones.
pub async fn passkey_ceremonies_are_taken_once_and_expire(fx: &dyn Fixture) {
    use jadpo_core::model::passkey::{ENCODING, NewChallenge, Purpose};
    let store = migrated(fx).await;
    let ceremony = |verifier: &str, expires_at| NewChallenge {
        verifier: verifier.to_owned(),
        purpose: Purpose::SignIn,
        bound_to: None,
        state: vec![0, 0, 7, 9],
        expires_at,
    };
    let mut tx = ok(store.begin().await, "begin");
    for c in [
        ceremony("v-live", t0() + Duration::minutes(5)),
        ceremony("v-race", t0() + Duration::minutes(5)),
        ceremony("v-old", t0() - Duration::seconds(1)),
    ] {
        ok(store.passkey_challenge_insert(tx.as_mut(), &c).await, "insert");
    }
    ok(tx.commit().await, "commit");
    assert!(take(store.as_ref(), "v-live", Purpose::Register).await.is_none(), "wrong purpose");
    let taken = take(store.as_ref(), "v-live", Purpose::SignIn).await;
    let taken = taken.unwrap_or_else(|| panic!("the ceremony was not found"));
    assert_eq!((taken.state, taken.encoding), (vec![0, 0, 7, 9], Some(ENCODING)));
    assert_eq!((taken.bound_to, taken.expires_at), (None, t0() + Duration::minutes(5)));
    assert!(take(store.as_ref(), "v-live", Purpose::SignIn).await.is_none(), "taken twice");
    // Two takers at once, each on its own connection and thread, released together.
    let takers = race(vec![fx.open(), fx.open()], |_, s| async move {
        take(s.as_ref(), "v-race", Purpose::SignIn).await.is_some()
    })
    .await;
    assert_eq!(takers.iter().filter(|t| **t).count(), 1, "two takers, one ceremony: {takers:?}");
    let mut tx = ok(store.begin().await, "begin");
    let deleted =
        store.housekeeping_delete(tx.as_mut(), RecordClass::PasskeyChallenges, t0(), 100).await;
    ok(tx.commit().await, "commit");
    assert_eq!(ok(deleted, "delete"), 1, "only the expired ceremony goes");
}

/// A passkey is stored once per credential id, read with its user's record in one statement
/// (gone with the user), and its counters change at each use.
pub async fn a_passkey_is_read_with_its_users_record(fx: &dyn Fixture) {
    use jadpo_core::model::passkey::{ENCODING, StoredPasskey};
    use jadpo_core::model::principal::EntityRecord;
    let store = migrated(fx).await;
    let people = EntityRecord { table: "conformance_people", id_column: "person_id" };
    let ddl = "CREATE TABLE conformance_people (person_id TEXT PRIMARY KEY)";
    ok(store.execute_once(ddl, &[]).await, "create");
    let insert = "INSERT INTO conformance_people (person_id) VALUES ('alice')";
    ok(store.execute_once(insert, &[]).await, "insert");
    let passkey = StoredPasskey {
        credential_id: "Y3JlZGVudGlhbA".into(),
        user_id: "alice".into(),
        user_handle: "aGFuZGxl".into(),
        credential: vec![1, 2, 3],
        counters: vec![0; 7],
        encoding: Some(ENCODING),
    };
    let mut tx = ok(store.begin().await, "begin");
    assert!(ok(store.passkey_insert(tx.as_mut(), &passkey, t0()).await, "insert"));
    assert!(!ok(store.passkey_insert(tx.as_mut(), &passkey, t0()).await, "again"), "twice");
    let mine = ok(store.passkeys_of_user(tx.as_mut(), "alice").await, "of user");
    assert_eq!(mine, vec![passkey.clone()]);
    ok(store.passkey_used(tx.as_mut(), &passkey.credential_id, &[5; 7], t0()).await, "used");
    let found = store.passkey_find(tx.as_mut(), &passkey.credential_id, Some(people)).await;
    assert_eq!(ok(found, "find").map(|p| p.counters), Some(vec![5; 7]));
    ok(tx.execute("DELETE FROM conformance_people WHERE person_id = 'alice'", &[]).await, "del");
    let gone = store.passkey_find(tx.as_mut(), &passkey.credential_id, Some(people)).await;
    assert!(ok(gone, "find").is_none(), "a deleted user's passkey was found");
    let alone = store.passkey_find(tx.as_mut(), &passkey.credential_id, None).await;
    assert!(ok(alone, "find").is_some(), "without a user table the passkey alone is read");
    ok(tx.commit().await, "commit");
}

/// A source's counts start empty, are written and read back in their window, start again once
/// it is over, and go with housekeeping after it; the mails counted across addresses' windows
/// are summed by when those windows started.
pub async fn sign_in_sources_count_within_their_hour(fx: &dyn Fixture) {
    use jadpo_core::model::sign_in::SourceWindow;
    let store = migrated(fx).await;
    let s = store.as_ref();
    let mut tx = ok(s.begin().await, "begin");
    let fresh = ok(s.sign_in_source(tx.as_mut(), "src-a", t0()).await, "source");
    assert_eq!(fresh, SourceWindow { started_at: t0(), sends: 0, wrong_codes: 0 });
    let counted = SourceWindow { sends: 3, wrong_codes: 2, ..fresh };
    ok(s.sign_in_source_set(tx.as_mut(), "src-a", counted).await, "set");
    ok(tx.commit().await, "commit");
    let mut tx = ok(s.begin().await, "begin");
    let later = t0() + Duration::minutes(59);
    assert_eq!(ok(s.sign_in_source(tx.as_mut(), "src-a", later).await, "again"), counted);
    let next = t0() + Duration::minutes(60);
    let anew = ok(s.sign_in_source(tx.as_mut(), "src-a", next).await, "next hour");
    assert_eq!(anew, SourceWindow { started_at: next, sends: 0, wrong_codes: 0 });
    ok(tx.rollback().await, "rollback");
    armed(s, "a@example.com", t0()).await;
    armed(s, "a@example.com", t0()).await;
    armed(s, "b@example.com", t0() + Duration::minutes(30)).await;
    let mut tx = ok(s.begin().await, "begin");
    let since = |m: i64| t0() + Duration::minutes(m);
    assert_eq!(ok(s.sign_in_sends_since(tx.as_mut(), since(-1)).await, "all"), 3);
    assert_eq!(ok(s.sign_in_sends_since(tx.as_mut(), since(10)).await, "b's"), 1);
    let cutoff = t0() + Duration::minutes(1);
    let gone = s.housekeeping_delete(tx.as_mut(), RecordClass::SignInSources, cutoff, 100).await;
    assert_eq!(ok(gone, "delete"), 1, "the source's window is over");
    ok(tx.commit().await, "commit");
}
