//! The local stand-in for external services: `POST /sink/{name}` (or a path under it, such as
//! `/sink/payments/charges`) records what it receives,
//! `GET /sink/{name}` lists it, and `PUT /sink/{name}/mode` with `{"fail": true}` makes it
//! answer `503` until set back, to watch retries and dead deliveries locally.
//!
//! Like a payment provider, a sink keeps what it answered each `Idempotency-Key`: the same
//! request again under a key gets the same answer (and acts once), another request under a used
//! key is refused with `422`. What it received, repeats and refusals included, stays listed, so
//! tests count the requests each key saw.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use serde_json::{Value, json};

use jadpo_http::problem;

#[derive(Debug, Default)]
struct Sink {
    received: Vec<Value>,
    failing: bool,
    /// Per idempotency key: the request it was first used with and the answer given.
    answered: BTreeMap<String, (Value, Value)>,
    /// How many requests were acted on (a repeat under a used key is not).
    acted: usize,
}

/// The sinks' shared state.
#[derive(Debug, Clone, Default)]
pub struct Sinks(Arc<Mutex<BTreeMap<String, Sink>>>);

impl Sinks {
    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Sink) -> T) -> T {
        let mut all = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(all.entry(name.to_owned()).or_default())
    }

    /// Makes `name` answer `503` (or stop doing so).
    pub fn set_failing(&self, name: &str, failing: bool) {
        self.with(name, |s| s.failing = failing);
    }

    /// What `name` received: `{"idempotency_key", "body"}` per request, in order.
    pub fn received(&self, name: &str) -> Vec<Value> {
        self.with(name, |s| s.received.clone())
    }
}

/// The sink routes, to merge into the local router.
pub fn router(sinks: Sinks) -> Router {
    Router::new()
        .route("/sink/{name}", post(receive).get(list))
        .route("/sink/{name}/{*path}", post(receive_at))
        .route("/sink/{name}/mode", put(set_mode))
        .with_state(sinks)
}

/// A call to a path under the sink (`/sink/payments/charges`): recorded like one to the sink.
async fn receive_at(
    State(sinks): State<Sinks>,
    Path((name, _path)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    receive(State(sinks), Path(name), headers, body).await
}

async fn receive(
    State(sinks): State<Sinks>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if sinks.with(&name, |s| s.failing) {
        return problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "Sink failing",
            &format!("sink {name} is set to fail"),
        );
    }
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let (Some(link), Some(code)) = (body["link"].as_str(), body["code"].as_str()) {
        // A sign-in mail: where a person running the local process looks for it.
        println!("mail to {}: sign in at {link} or with code {code}", body["to"]);
    }
    let answer = sinks.with(&name, |s| {
        s.received.push(json!({"idempotency_key": key, "body": body}));
        answer(s, &name, key, body)
    });
    match answer {
        Ok(answer) => (StatusCode::OK, axum::Json(answer)).into_response(),
        Err(key) => problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Idempotency key reused",
            &format!("key {key:?} was used with another request"),
        ),
    }
}

/// Acts on a request (or answers a repeat as the first time); `Err(key)` for a used key sent
/// with another request.
fn answer(s: &mut Sink, name: &str, key: Option<String>, body: Value) -> Result<Value, String> {
    if let Some((first, answer)) = key.as_ref().and_then(|k| s.answered.get(k)) {
        return if *first == body { Ok(answer.clone()) } else { Err(key.unwrap_or_default()) };
    }
    s.acted += 1;
    let answer = json!({"received": s.received.len(), "id": format!("{name}-{}", s.acted)});
    if let Some(key) = key {
        s.answered.insert(key, (body, answer.clone()));
    }
    Ok(answer)
}

async fn list(State(sinks): State<Sinks>, Path(name): Path<String>) -> Response {
    axum::Json(json!({"received": sinks.received(&name)})).into_response()
}

async fn set_mode(State(sinks): State<Sinks>, Path(name): Path<String>, body: Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["fail"].as_bool()) {
        Some(fail) => {
            sinks.with(&name, |s| s.failing = fail);
            axum::Json(json!({"sink": name, "fail": fail})).into_response()
        }
        None => problem(
            StatusCode::BAD_REQUEST,
            "Malformed mode",
            "send {\"fail\": true} or {\"fail\": false}",
        ),
    }
}
