//! What the console's tests share: requests through its router, and a signed-in session.
#![allow(dead_code, reason = "each test file uses its own part")]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use jadpo_console::{Console, ConsoleSettings, console};
use jadpo_engine::operate::Operator;
use jadpo_test_env::Env;
use tower::ServiceExt;

pub(crate) const HOST: &str = "127.0.0.1:7070";

pub(crate) struct Got {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub text: String,
}

pub(crate) async fn send(
    console: &Console,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    form: &str,
) -> Got {
    send_to(console, HOST, (method, path), cookie, form).await
}

pub(crate) async fn send_to(
    console: &Console,
    host: &str,
    (method, path): (&str, &str),
    cookie: Option<&str>,
    form: &str,
) -> Got {
    let mut request = Request::builder().method(method).uri(path).header("host", host);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    if method == "POST" {
        request = request.header("content-type", "application/x-www-form-urlencoded");
    }
    let request = request.body(Body::from(form.to_owned())).unwrap_or_else(|e| panic!("{e}"));
    let response = console.router.clone().oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap_or_default();
    Got { status, headers, text: String::from_utf8_lossy(&bytes).into_owned() }
}

pub(crate) fn settings() -> ConsoleSettings {
    ConsoleSettings {
        listen: HOST.parse().unwrap_or_else(|e| panic!("{e}")),
        no_login: false,
        hosts: Vec::new(),
        plain_http_on_network: false,
    }
}

pub(crate) fn open(env: &Env) -> Console {
    let operator = Operator::new("ops-alice").unwrap_or_else(|e| panic!("{e}"));
    console(env.engine.clone(), operator, &settings()).unwrap_or_else(|e| panic!("{e}"))
}

/// Signs in through `console`'s login link; the cookie and the page's CSRF token.
pub(crate) async fn sign_in(console: &Console) -> (String, String) {
    let link = console.login_path.clone().unwrap_or_else(|| panic!("a login link"));
    sign_in_as(console, &link, "ops-alice").await
}

/// Opens login `link` (its form), signs in as `name`: the cookie and the page's CSRF token.
pub(crate) async fn sign_in_as(console: &Console, link: &str, name: &str) -> (String, String) {
    let form = send(console, "GET", link, None, "").await;
    assert_eq!(form.status, StatusCode::OK, "{}", form.text);
    assert!(form.text.contains("name=\"operator\""), "the form asks who: {}", form.text);
    let token = link.split("token=").nth(1).unwrap_or_default();
    let body = format!("token={token}&operator={}", name.replace(' ', "+"));
    let got = send(console, "POST", "/console/login", None, &body).await;
    assert_eq!(got.status, StatusCode::SEE_OTHER, "{}", got.text);
    let set = got.headers.get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
    let cookie = set.split(';').next().unwrap_or_default().to_owned();
    let page = send(console, "GET", "/console/", Some(&cookie), "").await;
    let csrf = page
        .text
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no CSRF token in {}", page.text))
        .to_owned();
    (cookie, csrf)
}
