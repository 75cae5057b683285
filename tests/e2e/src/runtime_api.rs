//! A minimal AWS Lambda Runtime API (the four endpoints a function uses) that timestamps what the
//! function does: when it first asks for work (the end of its init), and what it answers. The
//! cold-start benchmark starts each binary against a fresh one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::Notify;

/// What one invocation came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation {
    /// The function's response.
    Response(Value),
    /// The error the function reported for the invocation.
    Error(Value),
}

#[derive(Default)]
struct Inner {
    first_next: Option<Instant>,
    queued: VecDeque<(String, Value)>,
    answers: Vec<(String, Invocation)>,
    init_error: Option<Value>,
}

#[derive(Clone, Default)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    changed: Arc<Notify>,
}

impl Shared {
    /// Runs `f` on the state, without waking anyone.
    fn read<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Runs `f` on the state and wakes everyone waiting for a change.
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let out = self.read(f);
        self.changed.notify_waiters();
        out
    }
}

/// A running Runtime API on a free port of 127.0.0.1, stopped when dropped.
pub struct RuntimeApi {
    shared: Shared,
    port: u16,
    server: tokio::task::JoinHandle<()>,
    next_id: u64,
}

impl RuntimeApi {
    /// Starts the server.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("runtime API: {e}"));
        let port = listener.local_addr().unwrap_or_else(|e| panic!("runtime API: {e}")).port();
        let shared = Shared::default();
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { shared, port, server, next_id: 0 }
    }

    /// The `AWS_LAMBDA_RUNTIME_API` value.
    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// When the function first asked for work; panics after `timeout`, or at once with the
    /// function's init error.
    pub async fn first_request(&self, timeout: Duration) -> Instant {
        self.wait(timeout, "asked for work", |inner| {
            if let Some(e) = &inner.init_error {
                panic!("the function failed to start: {e}");
            }
            inner.first_next
        })
        .await
    }

    /// Hands `event` to the function and waits for its answer.
    pub async fn invoke(&mut self, event: Value, timeout: Duration) -> Invocation {
        self.next_id += 1;
        let id = format!("req-{}", self.next_id);
        let queued = (id.clone(), event);
        self.shared.with(|inner| inner.queued.push_back(queued));
        self.wait(timeout, "answered", |inner| {
            inner.answers.iter().find(|(i, _)| *i == id).map(|(_, a)| a.clone())
        })
        .await
    }

    async fn wait<T>(
        &self,
        timeout: Duration,
        what: &str,
        mut ready: impl FnMut(&Inner) -> Option<T>,
    ) -> T {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.changed.notified();
            if let Some(found) = self.shared.read(|inner| ready(inner)) {
                return found;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("the function never {what} within {timeout:?}");
            }
        }
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn next(State(shared): State<Shared>) -> (HeaderMap, Bytes) {
    shared.with(|inner| {
        inner.first_next.get_or_insert_with(Instant::now);
    });
    loop {
        let notified = shared.changed.notified();
        if let Some((id, event)) = shared.read(|inner| inner.queued.pop_front()) {
            return (invocation_headers(&id), Bytes::from(event.to_string()));
        }
        notified.await;
    }
}

fn invocation_headers(id: &str) -> HeaderMap {
    let deadline = SystemTime::now() + Duration::from_secs(60);
    let deadline_ms = deadline.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    };
    set("lambda-runtime-aws-request-id", id.to_owned());
    set("lambda-runtime-deadline-ms", deadline_ms.to_string());
    set(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:us-east-1:123456789012:function:bench".to_owned(),
    );
    set("lambda-runtime-trace-id", "Root=1-00000000-000000000000000000000000".to_owned());
    headers
}

fn parse(body: &Bytes) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

async fn response(State(shared): State<Shared>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    shared.with(|inner| inner.answers.push((id, Invocation::Response(parse(&body)))));
    StatusCode::ACCEPTED
}

async fn error(State(shared): State<Shared>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    shared.with(|inner| inner.answers.push((id, Invocation::Error(parse(&body)))));
    StatusCode::ACCEPTED
}

async fn init_error(State(shared): State<Shared>, body: Bytes) -> StatusCode {
    shared.with(|inner| inner.init_error = Some(parse(&body)));
    StatusCode::ACCEPTED
}
