//! Passkeys over HTTP with a software authenticator: a signed-in customer registers one, anyone
//! signs in with it; every ceremony is answered at most once, and every refusal (another origin,
//! an unknown passkey, another user's ceremony, an expired one, a replay) starts no session.

use crate::common;

use axum::http::StatusCode;
use common::{Answer, Browser, Req, browser_of, mailed, post, send};
use jadpo_core::SqlValue;
use jadpo_test_env::authenticator::Authenticator;
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};

/// The public URL the test router runs under (`common::send`): the relying party.
const ORIGIN: &str = "https://shop.test";
const RP_ID: &str = "shop.test";

/// A customer signed in by a mailed code: their browser.
async fn signed_in(env: &mut Env, email: &str) -> Browser {
    let (_, code) = mailed(env, email).await;
    browser_of(&post(env, "/sign-in/code", json!({"email": email, "code": code})).await)
}

fn as_browser(browser: &Browser) -> Req<'_> {
    Req { browser: Some(browser), csrf: browser.csrf.as_deref(), ..Req::default() }
}

/// Registers `device`'s passkey for the customer in `browser`; the answer to the second step.
async fn register(env: &Env, browser: &Browser, device: &mut Authenticator) -> Answer {
    let options = send(env, "POST", "/passkeys/options", as_browser(browser), "").await;
    assert_eq!(options.status, StatusCode::OK, "{}", options.body);
    let created = device.create(&options.body);
    send(env, "POST", "/passkeys", as_browser(browser), &created.to_string()).await
}

/// A sign-in ceremony's options, for anyone.
async fn sign_in_options(env: &Env) -> Value {
    let options = post(env, "/sign-in/passkey/options", Value::Null).await;
    assert_eq!(options.status, StatusCode::OK, "{}", options.body);
    options.body
}

async fn who(env: &Env, browser: &Browser) -> Value {
    let me = send(env, "GET", "/me", Req { browser: Some(browser), ..Req::default() }, "").await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.body);
    me.body["owner"].clone()
}

/// The mails telling a user a passkey was added, oldest first (their bodies).
fn passkey_mails(env: &Env) -> Vec<Value> {
    let received = env.sinks.received("mailer").into_iter().map(|m| m["body"].clone());
    received.filter(|b| b["subject"] == "A passkey was added to your account").collect()
}

async fn count(env: &Env, sql: &str) -> i64 {
    env.count("main", sql).await
}

/// A customer registers a passkey from their browser, then signs in with it from anywhere: the
/// new session is theirs. The passkey's counters move at each sign-in; each ceremony works once.
async fn a_customer_registers_a_passkey_and_signs_in_with_it(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let alice = signed_in(&mut env, "alice@example.com").await;
    let owner = who(&env, &alice).await;
    let mut device = Authenticator::new(7, ORIGIN, RP_ID);
    let registered = register(&env, &alice, &mut device).await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.body);
    assert_eq!(registered.body["credential_id"], json!(device.credential_id()));
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkeys").await, 1);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkey_challenges").await, 0);
    env.drain().await;
    let told = passkey_mails(&env);
    assert_eq!(told.len(), 1, "{kind:?}: one mail tells alice: {told:?}");
    assert_eq!(told[0]["to"], json!("alice@example.com"), "{kind:?}");
    assert_eq!(told[0]["credential_id"], json!(device.credential_id()), "{kind:?}");

    let options = sign_in_options(&env).await;
    let assertion = device.get(&options).to_string();
    let answer = send(&env, "POST", "/sign-in/passkey", Req::default(), &assertion).await;
    let browser = browser_of(&answer);
    assert_eq!(who(&env, &browser).await, owner, "the passkey signed in someone else");
    let used = "SELECT count(*) AS n FROM jadpo_passkeys WHERE last_used_at IS NOT NULL";
    assert_eq!(count(&env, used).await, 1);

    let sessions = count(&env, "SELECT count(*) AS n FROM jadpo_sessions").await;
    let replay = send(&env, "POST", "/sign-in/passkey", Req::default(), &assertion).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED, "a replayed assertion: {}", replay.body);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_sessions").await, sessions);

    let again = device.get(&sign_in_options(&env).await).to_string();
    let second = send(&env, "POST", "/sign-in/passkey", Req::default(), &again).await;
    assert_eq!(second.status, StatusCode::OK, "a second sign-in: {}", second.body);

    // A ceremony under way is kept by its challenge's verifier, never the challenge.
    let pending = sign_in_options(&env).await;
    let challenge = pending["publicKey"]["challenge"].as_str().unwrap_or_default().to_owned();
    let raw = data_encoding::BASE64URL_NOPAD.decode(challenge.as_bytes());
    let raw = raw.unwrap_or_else(|e| panic!("the challenge {challenge:?}: {e}"));
    assert_eq!(raw.len(), 16);
    let rows = env.store("main").query_once("SELECT * FROM jadpo_passkey_challenges", &[]).await;
    let rows = rows.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), 1, "the pending ceremony");
    for value in rows.iter().flat_map(|r| r.values()) {
        let held = match value {
            SqlValue::Text(t) => t.contains(&challenge),
            SqlValue::Bytes(b) => b.windows(16).any(|w| w == raw.as_slice()),
            _ => false,
        };
        assert!(!held, "jadpo_passkey_challenges holds the challenge: {value:?}");
    }
}

/// Registering is for a signed-in user: nobody gets 401, a service 403, a browser write without
/// its CSRF token 403, a sign-in older than ten minutes 401; none of them starts a ceremony.
async fn registering_acts_for_a_signed_in_user_only(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let alice = signed_in(&mut env, "alice@example.com").await;
    let key = common::scoped_key(&env, "web", &["*"], None).await;
    for path in ["/passkeys/options", "/passkeys"] {
        let nobody = send(&env, "POST", path, Req::default(), "{}").await;
        assert_eq!(nobody.status, StatusCode::UNAUTHORIZED, "{path} as no one");
        let service = send(&env, "POST", path, Req { bearer: Some(&key), ..Req::default() }, "{}");
        assert_eq!(service.await.status, StatusCode::FORBIDDEN, "{path} as a service");
        let no_csrf = Req { browser: Some(&alice), ..Req::default() };
        let forged = send(&env, "POST", path, no_csrf, "{}").await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN, "{path} without the CSRF token");
    }
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkey_challenges").await, 0);
    // A session signed in more than ten minutes ago adds no passkey: sign in again first.
    env.clock.advance(chrono::Duration::minutes(11));
    let stale = send(&env, "POST", "/passkeys/options", as_browser(&alice), "").await;
    assert_eq!(stale.status, StatusCode::UNAUTHORIZED, "{kind:?}: {}", stale.body);
    assert_eq!(stale.body["title"], "Recent sign-in needed", "{}", stale.body);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkey_challenges").await, 0);
    let fresh = signed_in(&mut env, "alice@example.com").await;
    let mut device = Authenticator::new(13, ORIGIN, RP_ID);
    let added = register(&env, &fresh, &mut device).await;
    assert_eq!(
        added.status,
        StatusCode::CREATED,
        "{kind:?}: after signing in again: {}",
        added.body
    );
}

/// A customer lists their passkeys (credential id and times, never a key) and removes one; it
/// then signs nobody in. Another customer neither sees nor removes it (`404`, as for none), a
/// service is refused (`403`), no one `401`, and a browser removal without its CSRF token `403`.
async fn a_customer_lists_and_removes_their_passkeys(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let alice = signed_in(&mut env, "alice@example.com").await;
    let bob = signed_in(&mut env, "bob@example.com").await;
    let mut device = Authenticator::new(9, ORIGIN, RP_ID);
    let registered = register(&env, &alice, &mut device).await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.body);
    let id = device.credential_id();
    let listed = send(&env, "GET", "/passkeys", as_browser(&alice), "").await;
    assert_eq!(listed.status, StatusCode::OK, "{kind:?}: {}", listed.body);
    assert_eq!(listed.body["passkeys"][0]["credential_id"], json!(id), "{}", listed.body);
    assert!(listed.body["passkeys"][0]["registered_at"].is_string(), "{}", listed.body);
    assert_eq!(
        listed.body["passkeys"][0].as_object().map(|o| o.len()),
        Some(3),
        "only the id and times"
    );
    let bobs = send(&env, "GET", "/passkeys", as_browser(&bob), "").await;
    assert_eq!(bobs.body["passkeys"], json!([]), "{kind:?}: bob sees alice's: {}", bobs.body);

    let path = format!("/passkeys/{id}");
    let key = common::scoped_key(&env, "web", &["*"], None).await;
    let refused = [
        ("no one", Req::default(), StatusCode::UNAUTHORIZED),
        ("a service", Req { bearer: Some(&key), ..Req::default() }, StatusCode::FORBIDDEN),
        ("no CSRF token", Req { browser: Some(&alice), ..Req::default() }, StatusCode::FORBIDDEN),
        ("another customer", as_browser(&bob), StatusCode::NOT_FOUND),
    ];
    for (who, how, status) in refused {
        let answer = send(&env, "DELETE", &path, how, "").await;
        assert_eq!(answer.status, status, "{kind:?}: removed as {who}: {}", answer.body);
    }
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkeys").await, 1, "{kind:?}");
    let removed = send(&env, "DELETE", &path, as_browser(&alice), "").await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{kind:?}: {}", removed.body);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkeys").await, 0, "{kind:?}");
    let again = send(&env, "DELETE", &path, as_browser(&alice), "").await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{kind:?}: removed twice");
    let assertion = device.get(&sign_in_options(&env).await).to_string();
    let answer = send(&env, "POST", "/sign-in/passkey", Req::default(), &assertion).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{kind:?}: a removed passkey signed in");
}

/// "Sign out everywhere" ends the user's sessions and keeps their passkeys, unless asked
/// (`?passkeys=true`) to remove them too; a malformed ask is refused and ends nothing.
async fn signing_out_everywhere_removes_passkeys_only_when_asked(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let alice = signed_in(&mut env, "alice@example.com").await;
    let mut device = Authenticator::new(11, ORIGIN, RP_ID);
    assert_eq!(register(&env, &alice, &mut device).await.status, StatusCode::CREATED);
    let keys = "SELECT count(*) AS n FROM jadpo_passkeys";
    let bad =
        send(&env, "POST", "/sign-out/everywhere?passkeys=maybe", as_browser(&alice), "").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{kind:?}: {}", bad.body);
    who(&env, &alice).await; // still signed in: the refused ask ended nothing
    let kept = send(&env, "POST", "/sign-out/everywhere", as_browser(&alice), "").await;
    assert_eq!(kept.status, StatusCode::OK, "{kind:?}: {}", kept.body);
    assert_eq!(kept.body["passkeys_removed"], json!(0), "{}", kept.body);
    assert_eq!(count(&env, keys).await, 1, "{kind:?}: a passkey went without being asked");
    let assertion = device.get(&sign_in_options(&env).await).to_string();
    let again =
        browser_of(&send(&env, "POST", "/sign-in/passkey", Req::default(), &assertion).await);
    let all =
        send(&env, "POST", "/sign-out/everywhere?passkeys=true", as_browser(&again), "").await;
    assert_eq!(all.status, StatusCode::OK, "{kind:?}: {}", all.body);
    assert_eq!(
        (all.body["ended"].as_u64(), all.body["passkeys_removed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(count(&env, keys).await, 0, "{kind:?}");
    let assertion = device.get(&sign_in_options(&env).await).to_string();
    let refused = send(&env, "POST", "/sign-in/passkey", Req::default(), &assertion).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{kind:?}: a removed passkey signed in");
}

/// Responses that must not sign anyone in: from another origin, by a passkey nobody registered,
/// to a ceremony that expired, garbled; a registration answering another customer's ceremony;
/// the same passkey registered twice; a deleted customer's passkey.
async fn refused_passkey_responses_start_nothing(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let alice = signed_in(&mut env, "alice@example.com").await;
    let bob = signed_in(&mut env, "bob@example.com").await;
    let sessions = || count(&env, "SELECT count(*) AS n FROM jadpo_sessions");
    let before = sessions().await;
    let mut device = Authenticator::new(7, ORIGIN, RP_ID);
    assert_eq!(register(&env, &alice, &mut device).await.status, StatusCode::CREATED);

    let refused = |answer: Answer, status: StatusCode, what: &str| {
        assert_eq!(answer.status, status, "{what}: {}", answer.body);
        assert_eq!(answer.body["status"], json!(status.as_u16()), "{what}: a problem");
    };
    let mut phished = device.clone().at_origin("https://shop-test.evil");
    let relayed = phished.get(&sign_in_options(&env).await).to_string();
    let answer = send(&env, "POST", "/sign-in/passkey", Req::default(), &relayed).await;
    refused(answer, StatusCode::UNAUTHORIZED, "another origin");
    let mut stranger = Authenticator::new(9, ORIGIN, RP_ID);
    let unknown = stranger.get(&sign_in_options(&env).await).to_string();
    let answer = send(&env, "POST", "/sign-in/passkey", Req::default(), &unknown).await;
    refused(answer, StatusCode::UNAUTHORIZED, "an unregistered passkey");
    let late = device.get(&sign_in_options(&env).await).to_string();
    env.clock.advance(chrono::Duration::minutes(6));
    let answer = send(&env, "POST", "/sign-in/passkey", Req::default(), &late).await;
    refused(answer, StatusCode::UNAUTHORIZED, "an expired ceremony");
    let garbled = send(&env, "POST", "/sign-in/passkey", Req::default(), "{\"id\": 1}").await;
    refused(garbled, StatusCode::BAD_REQUEST, "a garbled response");
    assert_eq!(sessions().await, before, "a refused sign-in started a session");

    let bobs = send(&env, "POST", "/passkeys/options", as_browser(&bob), "").await;
    let mut bobs_device = Authenticator::new(8, ORIGIN, RP_ID);
    let created = bobs_device.create(&bobs.body).to_string();
    let answer = send(&env, "POST", "/passkeys", as_browser(&alice), &created).await;
    refused(answer, StatusCode::UNAUTHORIZED, "another customer's ceremony");
    let answer = send(&env, "POST", "/passkeys", as_browser(&bob), &created).await;
    refused(answer, StatusCode::UNAUTHORIZED, "a ceremony used up by a refused answer");
    let twice = register(&env, &alice, &mut device).await;
    refused(twice, StatusCode::CONFLICT, "the same passkey twice");
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_passkeys").await, 1);
    env.drain().await;
    assert_eq!(passkey_mails(&env).len(), 1, "{kind:?}: refused registrations mailed nobody");

    let owner = who(&env, &alice).await;
    let id = owner.as_str().unwrap_or_default().trim_start_matches("user:").to_owned();
    let mut tx = env.store("main").begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.execute("DELETE FROM shop_customers WHERE id = $1", &[id.as_str().into()])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let gone = device.get(&sign_in_options(&env).await).to_string();
    let answer = send(&env, "POST", "/sign-in/passkey", Req::default(), &gone).await;
    refused(answer, StatusCode::UNAUTHORIZED, "a deleted customer's passkey");
}

jadpo_test_env::both!(
    a_customer_lists_and_removes_their_passkeys,
    signing_out_everywhere_removes_passkeys_only_when_asked,
    a_customer_registers_a_passkey_and_signs_in_with_it,
    registering_acts_for_a_signed_in_user_only,
    refused_passkey_responses_start_nothing,
);
