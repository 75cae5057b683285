//! Sign-in by email over HTTP, browser sessions and their CSRF token, sign-out, and actions that
//! declare their callers: each refusal changes nothing, each link and code works once.

use crate::common;

use axum::http::StatusCode;
use common::{Answer, Browser, Req, WhoAmI, browser_of, club, mailed, mails, post, send};
use jadpo_application::{Application, Callers, ServiceEntity, UserEntity};
use jadpo_core::Dialect;
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::EngineSettings;
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_env::authenticator::Authenticator;
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};

async fn me(env: &Env, browser: &Browser) -> Answer {
    send(env, "GET", "/me", Req { browser: Some(browser), ..Req::default() }, "").await
}

async fn count(env: &Env, sql: &str) -> i64 {
    env.count("main", sql).await
}

const ITEMS: &str = r#"{"items": [{"sku": "A", "qty": 2}]}"#;

/// A person asks for a link, opens it, signs in and orders as themself through the browser
/// session: the cookie is `HttpOnly`, `Secure`, `SameSite=Lax`; a write without the CSRF token is
/// refused and writes nothing; the link works once.
async fn a_person_signs_in_by_link_and_orders_as_themself(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (token, code) = mailed(&mut env, "  Alice@Example.com ").await;
    assert_eq!(code.len(), 8);
    let page = send(
        &env,
        "GET",
        &format!("/sign-in/link?email=alice%40example.com&token={token}"),
        Req::default(),
        "",
    )
    .await;
    assert!(page.status == StatusCode::OK && page.text.contains(&token), "{}", page.text);
    assert_eq!(
        count(&env, "SELECT count(*) AS n FROM jadpo_sessions").await,
        0,
        "GET uses nothing"
    );
    let signed =
        post(&env, "/sign-in/link", json!({"email": "alice@example.com", "token": token})).await;
    let browser = browser_of(&signed);
    let session_cookie = signed.set_cookies.iter().find(|c| c.starts_with("__Host-jadpo_session="));
    let session_cookie = session_cookie.cloned().unwrap_or_default();
    for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/"] {
        assert!(session_cookie.contains(attribute), "{session_cookie}");
    }
    for cookie in &signed.set_cookies {
        assert!(cookie.starts_with("__Host-") && !cookie.contains("Domain"), "{cookie}");
    }
    // A cookie without the prefix (one a sibling subdomain could plant) is not read.
    let session = browser.session.clone().unwrap_or_default();
    let planted = format!("jadpo_session={session}");
    let tossed = Req { raw_cookie: Some(&planted), ..Req::default() };
    let answer = send(&env, "GET", "/me", tossed, "").await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "an unprefixed cookie was read");
    assert_eq!(me(&env, &browser).await.status, StatusCode::OK, "the prefixed one is");
    let user = signed.body["user_id"].as_str().unwrap_or_default().to_owned();
    let customer = format!(
        "SELECT count(*) AS n FROM shop_customers WHERE id = '{user}' AND email = 'alice@example.com'"
    );
    assert_eq!(count(&env, &customer).await, 1, "the first sign-in created the customer");
    let who = me(&env, &browser).await;
    assert_eq!(who.body["owner"], json!(format!("user:{user}")), "{}", who.body);

    let replay =
        post(&env, "/sign-in/link", json!({"email": "alice@example.com", "token": token})).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED, "a used link worked: {}", replay.body);
    let code_after =
        post(&env, "/sign-in/code", json!({"email": "alice@example.com", "code": code})).await;
    assert_eq!(code_after.status, StatusCode::UNAUTHORIZED, "the code outlived its link");

    let csrf = browser.csrf.clone().unwrap_or_default();
    let with = |csrf| Req { browser: Some(&browser), csrf, ..Req::default() };
    let forged = send(&env, "POST", "/actions/place_order", with(None), ITEMS).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    let wrong = send(&env, "POST", "/actions/place_order", with(Some("jadpo_cs_00")), ITEMS).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN, "{}", wrong.body);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM shop_orders").await, 0);
    let placed = send(&env, "POST", "/actions/place_order", with(Some(&csrf)), ITEMS).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.body);
    let theirs = format!("SELECT count(*) AS n FROM shop_orders WHERE customer = '{user}'");
    assert_eq!(count(&env, &theirs).await, 1);
    let audited = format!("SELECT count(*) AS n FROM jadpo_audit WHERE actor = 'user:{user}'");
    assert_eq!(count(&env, &audited).await, 1, "the audit row names the acting user");

    // Signing in again finds the same customer.
    let (_, code) = mailed(&mut env, "alice@example.com").await;
    let again = post(
        &env,
        "/sign-in/code",
        json!({"email": "ALICE@example.com", "code": code.to_lowercase()}),
    )
    .await;
    assert_eq!(again.body["user_id"], json!(user), "{}", again.body);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM shop_customers").await, 1);
}

/// `body` posted to `path` from client address `client`.
async fn from(env: &Env, client: &str, path: &str, body: Value) -> common::Answer {
    send(env, "POST", path, Req { client: Some(client), ..Req::default() }, &body.to_string()).await
}

/// A code works once; wrong codes count per address and per source: one source past its five
/// wrong codes an hour is refused (429) without counting against the address, so it cannot lock
/// the person out, who still signs in from their own address; twenty wrong codes from several
/// sources together lock the request's code and link.
async fn wrong_codes_lock_the_request(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let email = "bob@example.com";
    let (_, code) = mailed(&mut env, email).await;
    let wrong = json!({"email": email, "code": "00000000"});
    for left in (15..=19).rev() {
        let answer = from(&env, "198.51.100.1", "/sign-in/code", wrong.clone()).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        let detail = answer.body["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(&format!("{left} tries")), "{}", answer.body);
    }
    for _ in 0..3 {
        let refused = from(&env, "198.51.100.1", "/sign-in/code", wrong.clone()).await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{}", refused.body);
    }
    let other = from(&env, "198.51.100.2", "/sign-in/code", wrong.clone()).await;
    let detail = other.body["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.contains("14 tries"), "the refused tries counted against bob: {detail}");
    let right = from(&env, "203.0.113.9", "/sign-in/code", json!({"email": email, "code": code}));
    browser_of(&right.await);
    let replay = post(&env, "/sign-in/code", json!({"email": email, "code": code})).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED, "a used code worked");

    let (token, code) = mailed(&mut env, email).await;
    for n in 0..20 {
        let source = format!("192.0.2.{}", 10 + n / 5);
        let answer = from(&env, &source, "/sign-in/code", wrong.clone()).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "try {n}: {}", answer.body);
    }
    let locked = post(&env, "/sign-in/code", json!({"email": email, "code": code})).await;
    assert_eq!(locked.status, StatusCode::UNAUTHORIZED, "a locked code worked");
    let link = post(&env, "/sign-in/link", json!({"email": email, "token": token})).await;
    assert_eq!(link.status, StatusCode::UNAUTHORIZED, "a locked request's link worked");
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_sessions").await, 1);
}

/// One source asks for at most `sends_per_source` mails an hour whatever the addresses, and
/// everyone together for `sends_overall`; past either, 429 and nothing sent; the next hour
/// starts again.
async fn mails_are_limited_per_source_and_overall(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let limits = &mut env.engine.settings.sign_in;
    (limits.sends_per_source, limits.sends_overall) = (3, 5);
    async fn ask(env: &Env, client: &str, n: usize) -> StatusCode {
        let email = format!("p{n}@example.com");
        from(env, client, "/sign-in/email", json!({"email": email})).await.status
    }
    for n in 0..3 {
        assert_eq!(ask(&env, "198.51.100.1", n).await, StatusCode::ACCEPTED, "{kind:?}: mail {n}");
    }
    let fourth = ask(&env, "198.51.100.1", 3).await;
    assert_eq!(fourth, StatusCode::TOO_MANY_REQUESTS, "{kind:?}: a fourth mail from one source");
    for n in 4..6 {
        assert_eq!(ask(&env, "198.51.100.2", n).await, StatusCode::ACCEPTED, "{kind:?}: mail {n}");
    }
    let over = from(&env, "198.51.100.3", "/sign-in/email", json!({"email": "q@example.com"}));
    let over = over.await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS, "{kind:?}: a sixth mail overall");
    let said = over.body["detail"].as_str().unwrap_or_default();
    assert!(said.contains("too many sign-in mails are being sent"), "{kind:?}: {said}");
    env.drain().await;
    assert_eq!(mails(&env).len(), 5, "{kind:?}: refused requests sent nothing");
    let sources = "SELECT count(*) AS n FROM jadpo_sign_in_sources";
    assert_eq!(count(&env, sources).await, 2, "{kind:?}: the refused source counted nothing");
    env.clock.advance(chrono::Duration::minutes(61));
    assert_eq!(ask(&env, "198.51.100.1", 7).await, StatusCode::ACCEPTED, "{kind:?}: the next hour");
}

/// Five mails per address per hour; the sixth is 429 and sends nothing; other addresses and the
/// next hour are not affected. A newer request's link replaces the older one, whose mail is not
/// sent; a link past its lifetime is refused.
async fn mails_are_limited_replaced_and_expire(kind: Kind) {
    let mut env = Env::shop(kind).await;
    for _ in 0..5 {
        let ok = post(&env, "/sign-in/email", json!({"email": "carol@example.com"})).await;
        assert_eq!(ok.status, StatusCode::ACCEPTED);
    }
    let sixth = post(&env, "/sign-in/email", json!({"email": "Carol@Example.com"})).await;
    assert_eq!(sixth.status, StatusCode::TOO_MANY_REQUESTS, "{}", sixth.body);
    env.drain().await;
    assert_eq!(mails(&env).len(), 1, "only the latest of five requests is mailed");
    let (_, token, _) = mails(&env).remove(0);
    let other = post(&env, "/sign-in/email", json!({"email": "dave@example.com"})).await;
    assert_eq!(other.status, StatusCode::ACCEPTED);
    env.clock.advance(chrono::Duration::minutes(16));
    let late =
        post(&env, "/sign-in/link", json!({"email": "carol@example.com", "token": token})).await;
    assert_eq!(late.status, StatusCode::UNAUTHORIZED, "an expired link worked");
    env.clock.advance(chrono::Duration::minutes(45));
    let next_hour = post(&env, "/sign-in/email", json!({"email": "carol@example.com"})).await;
    assert_eq!(next_hour.status, StatusCode::ACCEPTED, "{}", next_hour.body);
}

/// Sign-out ends this browser session; sign-out everywhere ends the user's others and their API
/// tokens. Without the CSRF token neither works; a service and no one cannot sign out.
async fn sign_out_here_and_everywhere(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let email = "erin@example.com";
    let (_, code) = mailed(&mut env, email).await;
    let first =
        browser_of(&post(&env, "/sign-in/code", json!({"email": email, "code": code})).await);
    let (_, code) = mailed(&mut env, email).await;
    let second =
        browser_of(&post(&env, "/sign-in/code", json!({"email": email, "code": code})).await);
    let user = me(&env, &first).await.body["id"].as_str().unwrap_or_default().to_owned();
    let until = env.engine.clock.now() + chrono::Duration::days(1);
    let store = env.store("main");
    let issued = jadpo_engine::operate::tokens::issue_unrecorded(
        store.as_ref(),
        &user,
        until,
        env.engine.clock.as_ref(),
    );
    let api = issued.await.unwrap_or_else(|e| panic!("{e}")).secret;

    let no_csrf =
        send(&env, "POST", "/sign-out", Req { browser: Some(&first), ..Req::default() }, "").await;
    assert_eq!(no_csrf.status, StatusCode::FORBIDDEN);
    assert_eq!(
        me(&env, &first).await.status,
        StatusCode::OK,
        "a forged sign-out ended the session"
    );
    let csrf = first.csrf.as_deref();
    let out =
        send(&env, "POST", "/sign-out", Req { browser: Some(&first), csrf, ..Req::default() }, "")
            .await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    assert!(
        out.set_cookies
            .iter()
            .any(|c| c.starts_with("__Host-jadpo_session=;") && c.contains("Max-Age=0"))
    );
    assert_eq!(me(&env, &first).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(me(&env, &second).await.status, StatusCode::OK, "sign-out ended another session");

    let key = Scopes::parse(&["*"]).unwrap_or_else(|e| panic!("{e}"));
    let issued = jadpo_engine::operate::keys::issue_unrecorded(
        store.as_ref(),
        "web",
        None,
        &key,
        env.engine.clock.as_ref(),
    );
    let service = issued.await.unwrap_or_else(|e| panic!("{e}")).secret;
    let as_service = send(
        &env,
        "POST",
        "/sign-out/everywhere",
        Req { bearer: Some(&service), ..Req::default() },
        "",
    )
    .await;
    assert_eq!(as_service.status, StatusCode::FORBIDDEN);
    let as_no_one = send(&env, "POST", "/sign-out/everywhere", Req::default(), "").await;
    assert_eq!(as_no_one.status, StatusCode::UNAUTHORIZED);

    let csrf = second.csrf.as_deref();
    let all = send(
        &env,
        "POST",
        "/sign-out/everywhere",
        Req { browser: Some(&second), csrf, ..Req::default() },
        "",
    )
    .await;
    assert_eq!(all.body["ended"], json!(2), "{}", all.body);
    assert_eq!(me(&env, &second).await.status, StatusCode::UNAUTHORIZED);
    let token = send(&env, "GET", "/me", Req { bearer: Some(&api), ..Req::default() }, "").await;
    assert_eq!(
        token.status,
        StatusCode::UNAUTHORIZED,
        "the API token outlived sign-out everywhere"
    );
}

/// A browser session ends after 30 idle minutes; a request within them keeps it going.
async fn idle_sessions_end(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (_, code) = mailed(&mut env, "frank@example.com").await;
    let browser = browser_of(
        &post(&env, "/sign-in/code", json!({"email": "frank@example.com", "code": code})).await,
    );
    for _ in 0..3 {
        env.clock.advance(chrono::Duration::minutes(20));
        assert_eq!(me(&env, &browser).await.status, StatusCode::OK, "an active session ended");
    }
    env.clock.advance(chrono::Duration::minutes(31));
    assert_eq!(me(&env, &browser).await.status, StatusCode::UNAUTHORIZED, "an idle session lived");
}

/// A session is read with its customer's record: once the customer is deleted, their browser
/// session and API token authenticate nobody.
async fn a_deleted_customers_sessions_end(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (_, code) = mailed(&mut env, "kai@example.com").await;
    let browser = browser_of(
        &post(&env, "/sign-in/code", json!({"email": "kai@example.com", "code": code})).await,
    );
    let user = me(&env, &browser).await.body["id"].as_str().unwrap_or_default().to_owned();
    let until = env.engine.clock.now() + chrono::Duration::days(1);
    let store = env.store("main");
    let api = jadpo_engine::operate::tokens::issue_unrecorded(
        store.as_ref(),
        &user,
        until,
        env.engine.clock.as_ref(),
    );
    let api = api.await.unwrap_or_else(|e| panic!("{e}")).secret;
    let with_token = Req { bearer: Some(&api), ..Req::default() };
    assert_eq!(send(&env, "GET", "/me", with_token, "").await.status, StatusCode::OK);
    let delete = format!("DELETE FROM shop_customers WHERE id = '{user}'");
    store.execute_once(&delete, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        me(&env, &browser).await.status,
        StatusCode::UNAUTHORIZED,
        "a deleted customer's session worked"
    );
    let with_token = Req { bearer: Some(&api), ..Req::default() };
    assert_eq!(send(&env, "GET", "/me", with_token, "").await.status, StatusCode::UNAUTHORIZED);
}

/// Bad input to the sign-in routes is a clear 4xx and writes nothing.
async fn bad_sign_in_input_is_refused(kind: Kind) {
    let env = Env::shop(kind).await;
    let bad = post(&env, "/sign-in/email", json!({"email": "not-an-address"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let extra = post(&env, "/sign-in/email", json!({"email": "a@b.co", "admin": true})).await;
    assert_eq!(extra.status, StatusCode::BAD_REQUEST);
    let never =
        post(&env, "/sign-in/code", json!({"email": "gina@example.com", "code": "12345678"})).await;
    assert_eq!(never.status, StatusCode::UNAUTHORIZED);
    let shape =
        post(&env, "/sign-in/link", json!({"email": "gina@example.com", "token": "x"})).await;
    assert_eq!(shape.status, StatusCode::UNAUTHORIZED);
    assert_eq!(count(&env, "SELECT count(*) AS n FROM jadpo_sign_in_requests").await, 0);
    let cookie = Browser { session: Some("jadpo_bs_nope".into()), csrf: None };
    assert_eq!(me(&env, &cookie).await.status, StatusCode::UNAUTHORIZED);
}

/// A sign-in body a cross-site form could post (no preflight: `text/plain`, a form encoding, no
/// content type at all) is refused with `415` before anything is read: no mail requested, no
/// code spent, no cookie set. The same code sent as JSON then signs in.
async fn sign_in_takes_only_json_bodies(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (_, code) = mailed(&mut env, "hana@example.com").await;
    let requests = "SELECT count(*) AS n FROM jadpo_sign_in_requests";
    let before = count(&env, requests).await;
    let forged = json!({"email": "hana@example.com", "code": code}).to_string();
    for content_type in
        ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
    {
        let how = Req { content_type: Some(content_type), ..Req::default() };
        for path in ["/sign-in/email", "/sign-in/code", "/sign-in/link", "/sign-in/passkey"] {
            let body =
                if path == "/sign-in/email" { r#"{"email":"x@example.com"}"# } else { &forged };
            let answer = send(&env, "POST", path, how, body).await;
            assert_eq!(answer.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{path} {content_type}");
            assert_eq!(answer.body["title"], "JSON only", "{path}: {}", answer.text);
            assert!(answer.set_cookies.is_empty(), "{path}: no cookie for a refused body");
        }
    }
    assert_eq!(count(&env, requests).await, before, "no mail was requested");
    let charset = Req { content_type: Some("application/json; charset=utf-8"), ..Req::default() };
    let signed = send(&env, "POST", "/sign-in/code", charset, &forged).await;
    browser_of(&signed);
}

/// After a sign-in of every kind (link, code, API token, service key, and a mail not yet used),
/// no column of any table in any store holds any issued secret, token or code.
async fn no_table_holds_an_issued_secret(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let (link, unused_code) = mailed(&mut env, "hana@example.com").await;
    let by_link =
        post(&env, "/sign-in/link", json!({"email": "hana@example.com", "token": link})).await;
    let (unused_link, code) = mailed(&mut env, "ivan@example.com").await;
    let by_code =
        post(&env, "/sign-in/code", json!({"email": "ivan@example.com", "code": code})).await;
    let (pending_link, pending_code) = mailed(&mut env, "jo@example.com").await;
    let (a, b) = (browser_of(&by_link), browser_of(&by_code));
    let store = env.store("main");
    let until = env.engine.clock.now() + chrono::Duration::days(1);
    let api = jadpo_engine::operate::tokens::issue_unrecorded(
        store.as_ref(),
        "hana",
        until,
        env.engine.clock.as_ref(),
    );
    let api = api.await.unwrap_or_else(|e| panic!("{e}")).secret;
    let service = key_for(&env, "web").await;
    let (by_passkey, pending_challenge) = passkey_signed_in(&env, &b).await;
    let mut secrets =
        vec![link, unused_code, unused_link, code, pending_link, pending_code, api, service];
    secrets.extend([a.session, a.csrf, b.session, b.csrf].into_iter().flatten());
    secrets.extend([by_passkey.session, by_passkey.csrf].into_iter().flatten());
    // The secret part: after a token's prefix; a code is all secret, and so is a challenge
    // (base64url, whose alphabet has `_`).
    let mut secret_parts: Vec<String> =
        secrets.iter().map(|s| s.rsplit('_').next().unwrap_or(s).to_owned()).collect();
    secret_parts.push(pending_challenge);
    assert_eq!(secret_parts.len(), 15);
    let mut scanned = Vec::new();
    for name in ["main", "warehouse"] {
        let store = env.store(name);
        let tables = store.schema_tables().await.unwrap_or_else(|e| panic!("{e}"));
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        for table in tables {
            let rows = tx.query(&format!("SELECT * FROM {table}"), &[]).await;
            for row in rows.unwrap_or_else(|e| panic!("{table}: {e}")) {
                for (column, value) in row.columns().iter().zip(row.values()) {
                    let text = format!("{value:?}");
                    let found = secret_parts.iter().find(|s| text.contains(s.as_str()));
                    assert!(found.is_none(), "{name}.{table}.{column} holds an issued secret");
                }
            }
            scanned.push(table);
        }
        tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    }
    let kept = [
        "jadpo_sessions",
        "jadpo_sign_in_requests",
        "jadpo_service_keys",
        "jadpo_outbox",
        "jadpo_passkeys",
        "jadpo_passkey_challenges",
    ];
    for table in kept {
        assert!(scanned.iter().any(|t| t == table), "{table} was not scanned");
    }
}

/// The customer in `browser` adds a passkey and signs in with it; that browser, and the
/// challenge of a sign-in ceremony left unfinished.
async fn passkey_signed_in(env: &Env, browser: &Browser) -> (Browser, String) {
    let mut device = Authenticator::new(5, "https://shop.test", "shop.test");
    let how = || Req { browser: Some(browser), csrf: browser.csrf.as_deref(), ..Req::default() };
    let options = send(env, "POST", "/passkeys/options", how(), "").await;
    let created = device.create(&options.body).to_string();
    assert_eq!(send(env, "POST", "/passkeys", how(), &created).await.status, StatusCode::CREATED);
    let options = post(env, "/sign-in/passkey/options", Value::Null).await;
    let assertion = device.get(&options.body).to_string();
    let signed_in =
        browser_of(&send(env, "POST", "/sign-in/passkey", Req::default(), &assertion).await);
    let pending = post(env, "/sign-in/passkey/options", Value::Null).await;
    (signed_in, pending.body["publicKey"]["challenge"].as_str().unwrap_or_default().to_owned())
}

jadpo_test_env::both!(
    no_table_holds_an_issued_secret,
    a_person_signs_in_by_link_and_orders_as_themself,
    wrong_codes_lock_the_request,
    mails_are_limited_per_source_and_overall,
    mails_are_limited_replaced_and_expire,
    sign_out_here_and_everywhere,
    idle_sessions_end,
    bad_sign_in_input_is_refused,
    sign_in_takes_only_json_bodies,
    a_deleted_customers_sessions_end,
    actions_admit_only_their_declared_callers,
    a_key_works_only_while_its_service_is_listed,
);

/// An application whose users are members, never created by a first sign-in, and whose services
/// are listed in `club_services` (`ops` and `web`), with actions for anyone, for members, and for
/// the `ops` service only.
fn members_app() -> Application {
    let table = "CREATE TABLE club_services (name TEXT PRIMARY KEY); \
                 INSERT INTO club_services (name) VALUES ('ops'), ('web');";
    let services = || vec![Migration::new(Ledger::Workflow, 21, "club_services", table)];
    let mut listed = ServiceEntity::new("service", "main", "club_services");
    listed.id_column = "name".to_owned();
    club(UserEntity::new("member", "main", "members").email_sign_in("mailer"), "mailer")
        .services(listed)
        .migrations("main", Dialect::Sqlite, services())
        .migrations("main", Dialect::Postgres, services())
        .action_for("hello", "main", Callers::anyone(), WhoAmI)
        .action_for("members_only", "main", Callers::users(), WhoAmI)
        .action_for("ops_only", "main", Callers::named_services(&["ops"]), WhoAmI)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn key_for(env: &Env, service: &str) -> String {
    let all = Scopes::parse(&["*"]).unwrap_or_else(|e| panic!("{e}"));
    let issued = jadpo_engine::operate::keys::issue_unrecorded(
        env.store("main").as_ref(),
        service,
        None,
        &all,
        env.engine.clock.as_ref(),
    );
    issued.await.unwrap_or_else(|e| panic!("{e}")).secret
}

/// Actions declare their callers: anyone (no credential; an Idempotency-Key then refused), users
/// only (401 without a credential, 403 for a service), one named service (403 for another). An
/// address no member has gets the same answer as a member's but no mail, and creates nothing.
async fn actions_admit_only_their_declared_callers(kind: Kind) {
    let mut env = Env::new(kind, members_app(), EngineSettings::default()).await;
    let anonymous = send(&env, "POST", "/actions/hello", Req::default(), "{}").await;
    assert_eq!(anonymous.status, StatusCode::CREATED, "{}", anonymous.body);
    assert_eq!(anonymous.body["principal"], Value::Null);
    let keyed = Req { idempotency_key: Some("k1"), ..Req::default() };
    let replayable = send(&env, "POST", "/actions/hello", keyed, "{}").await;
    assert_eq!(replayable.status, StatusCode::BAD_REQUEST, "{}", replayable.body);

    let (ops, web) = (key_for(&env, "ops").await, key_for(&env, "web").await);
    let as_ = |bearer| Req { bearer, ..Req::default() };
    assert_eq!(
        send(&env, "POST", "/actions/members_only", as_(None), "{}").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(&env, "POST", "/actions/members_only", as_(Some(&web)), "{}").await.status,
        StatusCode::FORBIDDEN
    );
    let ops_call = send(&env, "POST", "/actions/ops_only", as_(Some(&ops)), "{}").await;
    assert_eq!(ops_call.body["principal"], json!("service:ops"), "{}", ops_call.body);
    assert_eq!(
        send(&env, "POST", "/actions/ops_only", as_(Some(&web)), "{}").await.status,
        StatusCode::FORBIDDEN
    );

    // No account and none made at first sign-in: the same answer, but no mail and no request.
    let asked = post(&env, "/sign-in/email", json!({"email": "stranger@example.com"})).await;
    assert_eq!(asked.status, StatusCode::ACCEPTED, "{}", asked.body);
    assert_eq!(asked.body["status"], "sent", "the answer tells nothing: {}", asked.body);
    env.drain().await;
    assert!(mails(&env).is_empty(), "a stranger was mailed");
    let requests = "SELECT count(*) AS n FROM jadpo_sign_in_requests";
    assert_eq!(env.count("main", requests).await, 0, "a request was kept for a stranger");
    let guessed = json!({"email": "stranger@example.com", "code": "12345678"});
    let refused = post(&env, "/sign-in/code", guessed).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.body);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM members").await, 0);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_sessions").await, 0);

    let mut tx = env.store("main").begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.execute("INSERT INTO members (id, email) VALUES ('m-1', 'member@example.com')", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let (_, code) = mailed(&mut env, "member@example.com").await;
    let member = browser_of(
        &post(&env, "/sign-in/code", json!({"email": "member@example.com", "code": code})).await,
    );
    let csrf = member.csrf.as_deref();
    let theirs = send(
        &env,
        "POST",
        "/actions/members_only",
        Req { browser: Some(&member), csrf, ..Req::default() },
        "{}",
    )
    .await;
    assert_eq!(theirs.body["principal"], json!("user:m-1"), "{}", theirs.body);
    let not_ops = send(
        &env,
        "POST",
        "/actions/ops_only",
        Req { browser: Some(&member), csrf, ..Req::default() },
        "{}",
    )
    .await;
    assert_eq!(not_ops.status, StatusCode::FORBIDDEN);
}

/// With the application's services listed, a key is accepted only while its service's row is
/// there: a key issued for an unlisted service (bypassing `jadpo keys issue`, which refuses it)
/// is 401, and deleting a service's row stops its keys at once.
async fn a_key_works_only_while_its_service_is_listed(kind: Kind) {
    let env = Env::new(kind, members_app(), EngineSettings::default()).await;
    let (ops, stray) = (key_for(&env, "ops").await, key_for(&env, "stray").await);
    let call = |key| {
        let req = Req { bearer: Some(key), ..Req::default() };
        send(&env, "POST", "/actions/ops_only", req, "{}")
    };
    let listed = call(&ops).await;
    assert_eq!(listed.body["principal"], json!("service:ops"), "{}", listed.body);
    let unlisted = call(&stray).await;
    assert_eq!(unlisted.status, StatusCode::UNAUTHORIZED, "{}", unlisted.body);
    let mut tx = env.store("main").begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.execute("DELETE FROM club_services WHERE name = 'ops'", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let removed = call(&ops).await;
    assert_eq!(removed.status, StatusCode::UNAUTHORIZED, "a removed service's key still works");
}
