//! Sign-in with an OpenID Connect ID token over HTTP, against a test issuer whose key set the
//! test serves: a token signs in its linked user, a first sign-in follows the application's
//! policy, and a token with the wrong audience, issuer, key, algorithm or expiry is refused and
//! changes nothing.

use crate::common;

use axum::http::StatusCode;
use common::{Answer, Req, WhoAmI, browser_of, club, post, send};
use jadpo_application::{Application, Callers, FirstSignIn, OidcProvider, UserEntity};
use jadpo_engine::EngineSettings;
use jadpo_test_env::{Env, Kind};
use serde_json::{Value, json};

/// A test issuer: a P-256 key, its key set served over HTTP, and tokens it signs.
struct Issuer {
    der: Vec<u8>,
    jwks: Value,
}

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "shop-client";

impl Issuer {
    fn new(kid: &str) -> Self {
        use p256::pkcs8::EncodePrivateKey;
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes).unwrap_or_else(|e| panic!("{e}"));
        let secret = p256::SecretKey::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
        let der = secret.to_pkcs8_der().unwrap_or_else(|e| panic!("{e}")).as_bytes().to_vec();
        let mut jwk = serde_json::to_value(secret.public_key().to_jwk()).unwrap_or_default();
        jwk["kid"] = json!(kid);
        jwk["alg"] = json!("ES256");
        jwk["use"] = json!("sig");
        Self { der, jwks: json!({"keys": [jwk]}) }
    }

    fn token(&self, kid: &str, claims: &Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        let key = jsonwebtoken::EncodingKey::from_ec_der(&self.der);
        jsonwebtoken::encode(&header, claims, &key).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Serves `jwks` at `/keys` on a free port; its base URL.
async fn serve_keys(jwks: Value) -> String {
    let listener =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let app = axum::Router::new()
        .route("/keys", axum::routing::get(move || async move { axum::Json(jwks) }));
    tokio::spawn(axum::serve(listener, app).into_future());
    format!("http://{addr}/keys")
}

/// A shop-like application whose users are created at first sign-in and may sign in with the
/// test issuer's ID tokens.
fn oidc_app(policy: FirstSignIn) -> Application {
    let users = UserEntity::new("member", "main", "members")
        .oidc_sign_in(OidcProvider::new("test", ISSUER, AUDIENCE, "issuer_keys"))
        .on_first_sign_in(policy);
    club(users, "issuer_keys")
        .action_for("members_only", "main", Callers::users(), WhoAmI)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An engine for `app` whose `issuer_keys` connection reaches `keys_url`.
async fn oidc_env(kind: Kind, app: Application, keys_url: &str) -> Env {
    let mut env = Env::new(kind, app, EngineSettings::default()).await;
    let bases =
        [("issuer_keys".to_owned(), url::Url::parse(keys_url).unwrap_or_else(|e| panic!("{e}")))];
    let connections = jadpo_runtime::connections::HttpConnections::new(
        bases.into_iter().collect(),
        std::time::Duration::from_secs(5),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    env.engine.connections = std::sync::Arc::new(connections);
    env
}

/// A nonce secret as the server issues one at the clock's now (the server keeps none: the
/// browser's cookie holds it), for the tests that are not about the nonce.
fn nonce_secret(env: &Env) -> String {
    format!("{}.{}", env.engine.clock.now().timestamp(), "5e".repeat(32))
}

fn nonce_of(secret: &str) -> String {
    jadpo_core::model::service_key::verifier(secret)
}

fn claims(env: &Env, sub: &str, email: Option<&str>) -> Value {
    let now = env.engine.clock.now().timestamp();
    let nonce = nonce_of(&nonce_secret(env));
    // Each token its own (an issuer never signs the same claims twice): one token signs in once.
    static ISSUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let jti = ISSUED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut c = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 300,
                       "nonce": nonce, "jti": jti.to_string()});
    if let Some(email) = email {
        c["email"] = json!(email);
        c["email_verified"] = json!(true);
    }
    c
}

async fn with_token(env: &Env, token: &str) -> Answer {
    with_token_and(env, token, Some(&nonce_secret(env))).await
}

/// `token` posted with `secret` in the nonce cookie (or with no cookie).
async fn with_token_and(env: &Env, token: &str, secret: Option<&str>) -> Answer {
    let cookie = secret.map(|s| format!("theme=dark; __Host-jadpo_oidc_nonce={s}"));
    let how = Req { raw_cookie: cookie.as_deref(), ..Req::default() };
    send(env, "POST", "/sign-in/oidc/test", how, &json!({"id_token": token}).to_string()).await
}

/// The nonce the server issues, and the secret its cookie holds.
async fn issued_nonce(env: &Env) -> (String, String, String) {
    let answer = post(env, "/sign-in/oidc/test/nonce", json!({})).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let nonce = answer.body["nonce"].as_str().unwrap_or_default().to_owned();
    let cookie = answer
        .set_cookies
        .iter()
        .find(|c| c.starts_with("__Host-jadpo_oidc_nonce="))
        .cloned()
        .unwrap_or_else(|| panic!("no nonce cookie: {:?}", answer.set_cookies));
    let secret = cookie
        .trim_start_matches("__Host-jadpo_oidc_nonce=")
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    (nonce, secret, cookie)
}

/// A token signs in once, and only from the browser its nonce was issued to: the nonce in the
/// body and its secret in an `HttpOnly` cookie; a replay, a token without the nonce, without the
/// cookie, with another browser's cookie or with a nonce over ten minutes old is refused (401)
/// and starts nothing; housekeeping forgets a used token once it has expired.
async fn a_token_signs_in_once_and_only_with_its_browser_s_nonce(kind: Kind) {
    use jadpo_core::model::housekeeping::RecordClass;
    let issuer = Issuer::new("k1");
    let keys_url = serve_keys(issuer.jwks.clone()).await;
    let env = oidc_env(kind, oidc_app(FirstSignIn::Create), &keys_url).await;
    let (nonce, secret, cookie) = issued_nonce(&env).await;
    for part in ["HttpOnly", "Secure", "Path=/", "Max-Age=600", "SameSite=Lax"] {
        assert!(cookie.contains(part), "{kind:?}: the nonce cookie lacks {part}: {cookie}");
    }
    assert_eq!(nonce, nonce_of(&secret), "{kind:?}: the nonce is the secret's digest");
    let mut c = claims(&env, "sub-1", Some("kim@example.com"));
    c["nonce"] = json!(nonce);
    let token = issuer.token("k1", &c);
    let sessions = "SELECT count(*) AS n FROM jadpo_sessions";

    let no_cookie = with_token_and(&env, &token, None).await;
    assert_eq!(no_cookie.status, StatusCode::UNAUTHORIZED, "{kind:?}: {}", no_cookie.body);
    let (_, elsewhere, _) = issued_nonce(&env).await;
    let other = with_token_and(&env, &token, Some(&elsewhere)).await;
    assert_eq!(other.status, StatusCode::UNAUTHORIZED, "{kind:?}: another browser's cookie");
    let mut bare = claims(&env, "sub-1", Some("kim@example.com"));
    bare.as_object_mut().map(|o| o.remove("nonce"));
    let without = with_token_and(&env, &issuer.token("k1", &bare), Some(&secret)).await;
    assert_eq!(without.status, StatusCode::UNAUTHORIZED, "{kind:?}: a token with no nonce");
    let said = without.body["detail"].as_str().unwrap_or_default();
    assert!(said.contains("nonce"), "{kind:?}: {said}");
    assert_eq!(env.count("main", sessions).await, 0, "{kind:?}: nothing started");

    let first = with_token_and(&env, &token, Some(&secret)).await;
    assert_eq!(first.status, StatusCode::OK, "{kind:?}: {}", first.body);
    let cleared = first
        .set_cookies
        .iter()
        .any(|c| c.starts_with("__Host-jadpo_oidc_nonce=;") && c.contains("Max-Age=0"));
    assert!(cleared, "{kind:?}: the nonce cookie is cleared: {:?}", first.set_cookies);
    let replay = with_token_and(&env, &token, Some(&secret)).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED, "{kind:?}: a replay: {}", replay.body);
    let said = replay.body["detail"].as_str().unwrap_or_default();
    assert!(said.contains("already used"), "{kind:?}: {said}");
    assert_eq!(env.count("main", sessions).await, 1, "{kind:?}: the replay started nothing");

    let (nonce, secret, _) = issued_nonce(&env).await;
    env.clock.advance(chrono::Duration::minutes(11));
    let mut late = claims(&env, "sub-1", None);
    late["nonce"] = json!(nonce);
    let stale = with_token_and(&env, &issuer.token("k1", &late), Some(&secret)).await;
    assert_eq!(stale.status, StatusCode::UNAUTHORIZED, "{kind:?}: an 11-minute-old nonce");
    let unknown = post(&env, "/sign-in/oidc/nobody/nonce", json!({})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{kind:?}: no such provider");

    let used = "SELECT count(*) AS n FROM jadpo_used_tokens";
    assert_eq!(env.count("main", used).await, 1, "{kind:?}: the used token is remembered");
    let store = env.store("main");
    let forget = |at: chrono::DateTime<chrono::Utc>| async move {
        let mut tx = store.begin().await.unwrap_or_else(|e| panic!("{e}"));
        let gone = store.housekeeping_delete(tx.as_mut(), RecordClass::UsedTokens, at, 100).await;
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
        gone.unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(forget(env.engine.clock.now() - chrono::Duration::minutes(11)).await, 0, "{kind:?}");
    assert_eq!(forget(env.engine.clock.now()).await, 1, "{kind:?}: gone once expired");
}

/// An ID token signs in the user its (issuer, subject) was linked to; the first sign-in links by
/// verified email or creates the member; a wrong audience, issuer or key, an expired token, an
/// unaccepted algorithm are refused (401) and link or start nothing.
async fn an_id_token_signs_in_its_linked_user(kind: Kind) {
    let issuer = Issuer::new("k1");
    let keys_url = serve_keys(issuer.jwks.clone()).await;
    let env = oidc_env(kind, oidc_app(FirstSignIn::Create), &keys_url).await;
    let first =
        with_token(&env, &issuer.token("k1", &claims(&env, "sub-1", Some("Kim@Example.com"))))
            .await;
    let browser = browser_of(&first);
    let user = first.body["user_id"].as_str().unwrap_or_default().to_owned();
    let member = format!(
        "SELECT count(*) AS n FROM members WHERE id = '{user}' AND email = 'kim@example.com'"
    );
    assert_eq!(env.count("main", &member).await, 1, "the first sign-in created the member");
    let csrf = browser.csrf.as_deref();
    let call = send(
        &env,
        "POST",
        "/actions/members_only",
        Req { browser: Some(&browser), csrf, ..Req::default() },
        "{}",
    )
    .await;
    assert_eq!(call.body["principal"], json!(format!("user:{user}")), "{}", call.body);
    let again = with_token(&env, &issuer.token("k1", &claims(&env, "sub-1", None))).await;
    assert_eq!(again.body["user_id"], json!(user), "the link, not the email, finds the user");
    let same_email =
        with_token(&env, &issuer.token("k1", &claims(&env, "sub-2", Some("kim@example.com"))))
            .await;
    assert_eq!(same_email.body["user_id"], json!(user), "a verified email links to its member");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_sign_in_links").await, 2);
    let sessions = env.count("main", "SELECT count(*) AS n FROM jadpo_sessions").await;

    let mut wrong_aud = claims(&env, "sub-3", Some("lee@example.com"));
    wrong_aud["aud"] = json!("another-client");
    let mut wrong_iss = claims(&env, "sub-3", Some("lee@example.com"));
    wrong_iss["iss"] = json!("https://evil.test");
    let mut expired = claims(&env, "sub-3", Some("lee@example.com"));
    expired["exp"] = json!(env.engine.clock.now().timestamp() - 120);
    let impostor = Issuer::new("k1");
    let hs256 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims(&env, "sub-3", Some("lee@example.com")),
        &jsonwebtoken::EncodingKey::from_secret(b"guess"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let refused = [
        ("wrong audience", issuer.token("k1", &wrong_aud)),
        ("wrong issuer", issuer.token("k1", &wrong_iss)),
        ("expired", issuer.token("k1", &expired)),
        ("another key", impostor.token("k1", &claims(&env, "sub-3", Some("lee@example.com")))),
        ("unknown key id", issuer.token("k9", &claims(&env, "sub-3", Some("lee@example.com")))),
        ("HS256", hs256),
        ("not a token", "x.y.z".to_owned()),
    ];
    for (what, token) in refused {
        let answer = with_token(&env, &token).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{what}: {}", answer.body);
    }
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_sign_in_links").await, 2);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_sessions").await, sessions);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM members").await, 1);
}

/// A first sign-in without a verified email, or under a policy that only links, finds no member
/// (403) and creates nothing; an issuer whose keys cannot be fetched answers 503.
async fn a_first_sign_in_follows_the_policy(kind: Kind) {
    let issuer = Issuer::new("k1");
    let keys_url = serve_keys(issuer.jwks.clone()).await;
    let env = oidc_env(kind, oidc_app(FirstSignIn::Create), &keys_url).await;
    let mut unverified = claims(&env, "sub-1", Some("max@example.com"));
    unverified["email_verified"] = json!(false);
    let answer = with_token(&env, &issuer.token("k1", &unverified)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM members").await, 0);

    let env = oidc_env(kind, oidc_app(FirstSignIn::LinkByEmail), &keys_url).await;
    let answer =
        with_token(&env, &issuer.token("k1", &claims(&env, "sub-1", Some("max@example.com"))))
            .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    let mut tx = env.store("main").begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.execute("INSERT INTO members (id, email) VALUES ('m-1', 'max@example.com')", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let linked =
        with_token(&env, &issuer.token("k1", &claims(&env, "sub-1", Some("max@example.com"))))
            .await;
    assert_eq!(linked.body["user_id"], json!("m-1"), "{}", linked.body);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM members").await, 1);

    let env = oidc_env(kind, oidc_app(FirstSignIn::Create), "http://127.0.0.1:9/keys").await;
    let down =
        with_token(&env, &issuer.token("k1", &claims(&env, "sub-1", Some("max@example.com"))))
            .await;
    assert_eq!(down.status, StatusCode::SERVICE_UNAVAILABLE, "{}", down.body);
}

/// A key set served at `/keys` that the test can replace, and how many times it was fetched.
struct Served {
    url: String,
    jwks: std::sync::Arc<std::sync::Mutex<Value>>,
    fetches: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Served {
    async fn start(jwks: Value) -> Self {
        use std::sync::atomic::Ordering;
        let shared = std::sync::Arc::new(std::sync::Mutex::new(jwks));
        let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (keys, count) = (shared.clone(), fetches.clone());
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let route = axum::routing::get(move || {
            count.fetch_add(1, Ordering::SeqCst);
            let jwks = keys.lock().map(|k| k.clone()).unwrap_or_default();
            async move { axum::Json(jwks) }
        });
        tokio::spawn(
            axum::serve(listener, axum::Router::new().route("/keys", route)).into_future(),
        );
        Self { url: format!("http://{addr}/keys"), jwks: shared, fetches }
    }

    fn fetched(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The issuer's key set is fetched once and kept: more sign-ins fetch nothing; a token with a
/// key id the kept set lacks fetches it again only 30 s after the last fetch (a flood of forged
/// key ids costs the issuer nothing), then a rotated key signs in; an hour on, the set is
/// fetched afresh.
async fn the_issuer_s_keys_are_kept_and_fetched_again_only_when_needed(kind: Kind) {
    let issuer = Issuer::new("k1");
    let served = Served::start(issuer.jwks.clone()).await;
    let env = oidc_env(kind, oidc_app(FirstSignIn::Create), &served.url).await;
    for n in 0..3 {
        let token = issuer.token("k1", &claims(&env, "sub-1", Some("kim@example.com")));
        assert_eq!(with_token(&env, &token).await.status, StatusCode::OK, "{kind:?}: sign-in {n}");
    }
    assert_eq!(served.fetched(), 1, "{kind:?}: the key set was fetched more than once");
    let rotated = Issuer::new("k2");
    let both = json!({"keys": [issuer.jwks["keys"][0].clone(), rotated.jwks["keys"][0].clone()]});
    *served.jwks.lock().unwrap_or_else(|e| panic!("{e}")) = both;
    for _ in 0..5 {
        let forged = rotated.token("k2", &claims(&env, "sub-2", Some("lee@example.com")));
        assert_eq!(with_token(&env, &forged).await.status, StatusCode::UNAUTHORIZED, "{kind:?}");
    }
    assert_eq!(served.fetched(), 1, "{kind:?}: unknown key ids refetched within 30 s");
    env.clock.advance(chrono::Duration::seconds(31));
    let token = rotated.token("k2", &claims(&env, "sub-2", Some("lee@example.com")));
    assert_eq!(with_token(&env, &token).await.status, StatusCode::OK, "{kind:?}: the rotated key");
    assert_eq!(served.fetched(), 2, "{kind:?}");
    let token = issuer.token("k1", &claims(&env, "sub-1", None));
    assert_eq!(with_token(&env, &token).await.status, StatusCode::OK, "{kind:?}");
    assert_eq!(served.fetched(), 2, "{kind:?}: a kept key refetched");
    env.clock.advance(chrono::Duration::minutes(61));
    let token = issuer.token("k1", &claims(&env, "sub-1", None));
    assert_eq!(with_token(&env, &token).await.status, StatusCode::OK, "{kind:?}");
    assert_eq!(served.fetched(), 3, "{kind:?}: an hour-old key set was used");
}

/// A token for several audiences signs in only when its authorized party (`azp`) is this
/// application; an `azp` naming another client is refused whatever the audience.
async fn several_audiences_need_this_application_as_the_authorized_party(kind: Kind) {
    let issuer = Issuer::new("k1");
    let keys_url = serve_keys(issuer.jwks.clone()).await;
    let env = oidc_env(kind, oidc_app(FirstSignIn::Create), &keys_url).await;
    let with = |aud: Value, azp: Option<&str>| {
        let mut c = claims(&env, "sub-1", Some("kim@example.com"));
        c["aud"] = aud;
        if let Some(azp) = azp {
            c["azp"] = json!(azp);
        }
        issuer.token("k1", &c)
    };
    let refused = [
        ("several, no azp", with(json!([AUDIENCE, "another-client"]), None)),
        ("several, azp another", with(json!([AUDIENCE, "another-client"]), Some("another-client"))),
        ("one, azp another", with(json!(AUDIENCE), Some("another-client"))),
    ];
    for (what, token) in refused {
        let answer = with_token(&env, &token).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{kind:?}: {what}: {}", answer.body);
    }
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM members").await, 0, "{kind:?}");
    let ok = with_token(&env, &with(json!([AUDIENCE, "another-client"]), Some(AUDIENCE))).await;
    assert_eq!(ok.status, StatusCode::OK, "{kind:?}: {}", ok.body);
}

jadpo_test_env::both!(
    a_token_signs_in_once_and_only_with_its_browser_s_nonce,
    an_id_token_signs_in_its_linked_user,
    a_first_sign_in_follows_the_policy,
    the_issuer_s_keys_are_kept_and_fetched_again_only_when_needed,
    several_audiences_need_this_application_as_the_authorized_party,
);
