//! The `commit` function's deadline, on both adapters: the Lambda context's deadline reaches an
//! action through `with_invocation_deadline`, so an action starts no changing call it could not
//! finish before the function is stopped; its caller is told to try again (`503`,
//! `Retry-After`) with nothing sent and nothing written. With time enough, or with no context
//! (the local process), the call is made.

use async_trait::async_trait;
use jadpo_application::{Action, ActionOutput, Application, HandlerContext, HandlerError};
use jadpo_core::Clock;
use jadpo_core::model::service_key::Scopes;
use jadpo_engine::EngineSettings;
use jadpo_engine::operate::keys::issue_unrecorded;
use jadpo_fn_commit::with_invocation_deadline;
use jadpo_http::{HttpState, WebSettings, router};
use jadpo_test_env::{Env, Kind};
use lambda_http::{Body, Context, Request, RequestExt};
use serde_json::{Value, json};
use tower::ServiceExt;

/// One changing call, then the answer.
struct Charge;

#[async_trait]
impl Action for Charge {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        _: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let answer = ctx.call("payments", "/charges", json!({"amount": 5})).await?;
        Ok(ActionOutput::ok(json!({"charged": answer})))
    }
}

async fn env(kind: Kind) -> (Env, String) {
    let app = Application::builder("t")
        .store("main")
        .connection("payments")
        .action("charge", "main", Charge)
        .calls("charge", &["payments"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let env = Env::new(kind, app, EngineSettings::default()).await;
    let clock = env.engine.clock.as_ref();
    let scopes = Scopes::all();
    let key = issue_unrecorded(env.store("main").as_ref(), "web", None, &scopes, clock).await;
    let key = key.unwrap_or_else(|e| panic!("{e}")).secret;
    (env, key)
}

/// `POST /actions/charge` as `lambda_http` hands it over, with the invocation's context when
/// `deadline_ms` is given.
fn request(key: &str, deadline_ms: Option<i64>) -> Request {
    let request = lambda_http::http::Request::builder()
        .method("POST")
        .uri("/actions/charge")
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap_or_else(|e| panic!("{e}"));
    match deadline_ms {
        Some(ms) => {
            let mut context = Context::default();
            context.deadline = u64::try_from(ms).unwrap_or_default();
            request.with_lambda_context(context)
        }
        None => request,
    }
}

async fn send(env: &Env, request: Request) -> (u16, Option<String>) {
    let web = WebSettings { public_url: None, secure_cookies: true };
    let state = HttpState::new(env.engine.clone(), web).unwrap_or_else(|e| panic!("{e}"));
    let routes = with_invocation_deadline(router(state));
    let response = routes.oneshot(request).await.unwrap_or_else(|e| panic!("{e}"));
    let retry_after = response.headers().get("retry-after").map(|v| format!("{v:?}"));
    (response.status().as_u16(), retry_after)
}

async fn a_call_is_not_started_too_close_to_the_deadline(kind: Kind) {
    let (env, key) = env(kind).await;
    let soon = env.clock.now().timestamp_millis() + 1_000;
    let (status, retry_after) = send(&env, request(&key, Some(soon))).await;
    assert_eq!((status, retry_after.as_deref()), (503, Some("\"1\"")), "{kind:?}");
    assert!(env.sinks.received("payments").is_empty(), "{kind:?}: nothing sent");
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_steps").await, 0);
    assert_eq!(env.count("main", "SELECT count(*) AS n FROM jadpo_outbox").await, 0);

    let later = env.clock.now().timestamp_millis() + 600_000;
    assert_eq!(send(&env, request(&key, Some(later))).await.0, 200, "{kind:?}: time enough");
    assert_eq!(send(&env, request(&key, None)).await.0, 200, "{kind:?}: no context");
    // An emulator's placeholder (a deadline of 0, long past) is no deadline at all.
    assert_eq!(send(&env, request(&key, Some(0))).await.0, 200, "{kind:?}: placeholder");
    assert_eq!(env.sinks.received("payments").len(), 3, "{kind:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_call_is_not_started_too_close_to_the_deadline() {
    a_call_is_not_started_too_close_to_the_deadline(Kind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_call_is_not_started_too_close_to_the_deadline() {
    a_call_is_not_started_too_close_to_the_deadline(Kind::Postgres).await;
}
