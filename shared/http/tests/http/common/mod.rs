//! What the sign-in tests share: a request with a browser's cookie, CSRF token or bearer
//! credential through the router, the browser a sign-in answer sets up, an action that answers
//! who called it, and the small application whose users are `members`.

#![allow(dead_code, reason = "each test binary uses its own part of these helpers")]

pub(crate) mod calls;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_application::{
    Action, ActionOutput, Application, ApplicationBuilder, HandlerContext, HandlerError, UserEntity,
};
use jadpo_core::Dialect;
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::operate::keys::issue_unrecorded;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_env::Env;
use serde_json::{Value, json};
use tower::ServiceExt;

/// One answer, with the cookies it set.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub body: Value,
    pub set_cookies: Vec<String>,
    pub text: String,
}

/// A browser: its cookies go with every request, its CSRF token only where the page sends it.
#[derive(Default, Clone)]
pub(crate) struct Browser {
    pub session: Option<String>,
    pub csrf: Option<String>,
}

#[derive(Default, Clone, Copy)]
pub(crate) struct Req<'a> {
    pub browser: Option<&'a Browser>,
    pub csrf: Option<&'a str>,
    pub bearer: Option<&'a str>,
    pub idempotency_key: Option<&'a str>,
    /// The body's content type; `application/json` when `None`.
    pub content_type: Option<&'a str>,
    /// A `Cookie` header sent as written (instead of the browser's).
    pub raw_cookie: Option<&'a str>,
    /// The client's address, as the edge puts it on the request.
    pub client: Option<&'a str>,
}

pub(crate) async fn send(env: &Env, method: &str, path: &str, how: Req<'_>, body: &str) -> Answer {
    let web = WebSettings { public_url: Some("https://shop.test".into()), secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    let content_type = how.content_type.unwrap_or("application/json");
    let mut request = Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        request = request.header("content-type", content_type);
    }
    if let Some(raw) = how.raw_cookie {
        request = request.header("cookie", raw);
    } else if let Some(session) = how.browser.and_then(|b| b.session.as_deref()) {
        request = request.header("cookie", format!("theme=dark; __Host-jadpo_session={session}"));
    }
    if let Some(token) = how.csrf {
        request = request.header("x-csrf-token", token);
    }
    if let Some(token) = how.bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(key) = how.idempotency_key {
        request = request.header("idempotency-key", key);
    }
    if let Some(ip) = how.client {
        let ip = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
        request = request.extension(jadpo_http::ClientAddr(ip));
    }
    let request = request.body(Body::from(body.to_owned())).unwrap_or_else(|e| panic!("{e}"));
    let response = router(state).oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let set_cookies = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer { status, body, set_cookies, text }
}

pub(crate) async fn post(env: &Env, path: &str, body: Value) -> Answer {
    send(env, "POST", path, Req::default(), &body.to_string()).await
}

/// The browser a successful sign-in answer sets up.
pub(crate) fn browser_of(answer: &Answer) -> Browser {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let value = |name: &str| {
        answer
            .set_cookies
            .iter()
            .find_map(|c| c.strip_prefix(&format!("{name}=")))
            .and_then(|c| c.split(';').next())
            .map(str::to_owned)
    };
    let csrf = value("__Host-jadpo_csrf");
    assert_eq!(csrf.as_deref(), answer.body["csrf_token"].as_str(), "the page gets its CSRF token");
    Browser { session: value("__Host-jadpo_session"), csrf }
}

/// An action that answers who called it.
pub(crate) struct WhoAmI;

#[async_trait::async_trait]
impl Action for WhoAmI {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        _input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let who = ctx.principal().map(|p| p.owner());
        Ok(ActionOutput::created(json!({"principal": who})))
    }
}

/// An application `club` on one store, `main`, whose users are `members` (never created by a
/// sign-in unless `users` says so), with `connection` declared.
pub(crate) fn club(users: UserEntity, connection: &str) -> ApplicationBuilder {
    let table = "CREATE TABLE members (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE)";
    let migrations = || vec![Migration::new(Ledger::Workflow, 20, "members", table)];
    Application::builder("club")
        .store("main")
        .connection(connection)
        .users(users)
        .migrations("main", Dialect::Sqlite, migrations())
        .migrations("main", Dialect::Postgres, migrations())
}

/// The sign-in mails the mailer received, oldest first: (to, link token, code).
pub(crate) fn mails(env: &Env) -> Vec<(String, String, String)> {
    env.sinks
        .received("mailer")
        .into_iter()
        .filter_map(|m| {
            let body = &m["body"];
            let link = body["link"].as_str()?;
            let token = link.split("token=").nth(1)?.to_owned();
            let to = body["to"].as_str()?.to_owned();
            Some((to, token, body["code"].as_str()?.to_owned()))
        })
        .collect()
}

/// Requests a mail for `email` and delivers it; its link token and code.
pub(crate) async fn mailed(env: &mut Env, email: &str) -> (String, String) {
    let asked = post(env, "/sign-in/email", json!({"email": email})).await;
    assert_eq!(asked.status, StatusCode::ACCEPTED, "{}", asked.body);
    env.drain().await;
    let (to, token, code) = mails(env).pop().unwrap_or_else(|| panic!("no sign-in mail"));
    assert_eq!(to, email.trim().to_lowercase());
    (token, code)
}

/// A key for `service` (listed in the shop's services first) allowed `scopes`, valid until
/// `expires_at`.
pub(crate) async fn scoped_key(
    env: &Env,
    service: &str,
    scopes: &[&str],
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
) -> String {
    let services = env.engine.app.services().unwrap_or_else(|| panic!("the shop lists services"));
    let (sql, name) = (services.insert_if_missing_sql(), [service.into()]);
    env.store("main").execute_once(&sql, &name).await.unwrap_or_else(|e| panic!("{e}"));
    let scopes = Scopes::parse(scopes).unwrap_or_else(|e| panic!("{e}"));
    let clock = env.engine.clock.as_ref();
    let issued = issue_unrecorded(env.store("main").as_ref(), service, expires_at, &scopes, clock);
    issued.await.unwrap_or_else(|e| panic!("{e}")).secret
}
