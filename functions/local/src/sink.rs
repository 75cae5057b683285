//! The local stand-in for external services: `POST /sink/{name}` (or a path under it, such as
//! `/sink/payments/charges`) records what it receives,
//! `GET /sink/{name}` lists it, and `PUT /sink/{name}/mode` with `{"fail": true}` makes it
//! answer `503` until set back, to watch retries and dead deliveries locally.
//!
//! Like a payment provider, a sink keeps what it answered each `Idempotency-Key`: the same
//! request again under a key gets the same answer (and acts once), another request under a used
//! key is refused with `422`. What it received, repeats and refusals included, is listed, so
//! tests count the requests each key saw: the last [`RECEIVED_KEPT`] requests, with the count of
//! all of them. A long local run under load makes hundreds of thousands of calls; keeping each
//! (twice, as JSON values) grew the process by hundreds of megabytes, so a key keeps its first
//! request as text and the list is bounded. So is everything else a caller can make it keep: the
//! last [`KEYS_KEPT`] keys' answers per sink (an older key is then new again, as at a provider
//! whose key window has passed), and at most [`SINKS_KEPT`] sinks (another name answers `404`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use serde_json::{Value, json};

use jadpo_http::problem;

/// How many received requests a sink lists (the oldest are dropped beyond it).
pub const RECEIVED_KEPT: usize = 10_000;
/// How many idempotency keys' answers a sink keeps (the oldest are forgotten beyond it).
pub const KEYS_KEPT: usize = 200_000;
/// How many sinks (names) the process keeps; a request naming another is refused.
pub const SINKS_KEPT: usize = 64;

#[derive(Debug, Default)]
struct Sink {
    /// The last [`RECEIVED_KEPT`] requests.
    received: VecDeque<Value>,
    /// How many requests were received in all.
    total: usize,
    failing: bool,
    /// Per idempotency key: the request it was first used with (as JSON text) and the answer.
    answered: BTreeMap<String, (String, Value)>,
    /// The keys of `answered`, oldest first, to forget the oldest beyond [`KEYS_KEPT`].
    key_order: VecDeque<String>,
    /// How many requests were acted on (a repeat under a used key is not).
    acted: usize,
}

/// The sinks' shared state.
#[derive(Debug, Clone, Default)]
pub struct Sinks(Arc<Mutex<BTreeMap<String, Sink>>>);

impl Sinks {
    /// Runs `f` on the sink `name`, made on first use; `None` when that would be one sink more
    /// than [`SINKS_KEPT`].
    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Sink) -> T) -> Option<T> {
        let mut all = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !all.contains_key(name) && all.len() >= SINKS_KEPT {
            return None;
        }
        Some(f(all.entry(name.to_owned()).or_default()))
    }

    /// Makes `name` answer `503` (or stop doing so); whether there is (now) such a sink.
    pub fn set_failing(&self, name: &str, failing: bool) -> bool {
        self.with(name, |s| s.failing = failing).is_some()
    }

    /// What `name` received: `{"idempotency_key", "body"}` per request, in order (the last
    /// [`RECEIVED_KEPT`]).
    pub fn received(&self, name: &str) -> Vec<Value> {
        self.with(name, |s| s.received.iter().cloned().collect()).unwrap_or_default()
    }

    /// How many requests `name` received in all, and under how many keys it acted.
    pub fn counts(&self, name: &str) -> (usize, usize) {
        self.with(name, |s| (s.total, s.answered.len())).unwrap_or_default()
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
    let Some(failing) = sinks.with(&name, |s| s.failing) else { return too_many(&name) };
    if failing {
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
    let Some(answer) = sinks.with(&name, |s| record(s, &name, key, body)) else {
        return too_many(&name);
    };
    match answer {
        Ok(answer) => (StatusCode::OK, axum::Json(answer)).into_response(),
        Err(key) => problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Idempotency key reused",
            &format!("key {key:?} was used with another request"),
        ),
    }
}

fn too_many(name: &str) -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "No such sink",
        &format!("the local process keeps at most {SINKS_KEPT} sinks; {name:?} would be one more"),
    )
}

/// Lists a request (dropping the oldest beyond [`RECEIVED_KEPT`]) and answers it.
fn record(s: &mut Sink, name: &str, key: Option<String>, body: Value) -> Result<Value, String> {
    if s.received.len() == RECEIVED_KEPT {
        s.received.pop_front();
    }
    s.total += 1;
    let answered = answer(s, name, key.clone(), &body);
    s.received.push_back(json!({"idempotency_key": key, "body": body}));
    answered
}

/// Acts on a request (or answers a repeat as the first time); `Err(key)` for a used key sent
/// with another request.
fn answer(s: &mut Sink, name: &str, key: Option<String>, body: &Value) -> Result<Value, String> {
    // Object keys serialize in order, so the same request always gives the same text.
    let text = body.to_string();
    if let Some((first, answer)) = key.as_ref().and_then(|k| s.answered.get(k)) {
        return if *first == text { Ok(answer.clone()) } else { Err(key.unwrap_or_default()) };
    }
    s.acted += 1;
    let answer = json!({"received": s.total, "id": format!("{name}-{}", s.acted)});
    if let Some(key) = key {
        if s.key_order.len() == KEYS_KEPT {
            if let Some(oldest) = s.key_order.pop_front() {
                s.answered.remove(&oldest);
            }
        }
        s.key_order.push_back(key.clone());
        s.answered.insert(key, (text, answer.clone()));
    }
    Ok(answer)
}

async fn list(State(sinks): State<Sinks>, Path(name): Path<String>) -> Response {
    let listed = sinks.with(
        &name,
        |s| json!({"received": s.received, "total": s.total, "keys": s.answered.len()}),
    );
    match listed {
        Some(listed) => axum::Json(listed).into_response(),
        None => too_many(&name),
    }
}

async fn set_mode(State(sinks): State<Sinks>, Path(name): Path<String>, body: Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["fail"].as_bool()) {
        Some(fail) => {
            if !sinks.set_failing(&name, fail) {
                return too_many(&name);
            }
            axum::Json(json!({"sink": name, "fail": fail})).into_response()
        }
        None => problem(
            StatusCode::BAD_REQUEST,
            "Malformed mode",
            "send {\"fail\": true} or {\"fail\": false}",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sink_lists_its_last_requests_counts_all_and_answers_a_key_alike() {
        let mut s = Sink::default();
        let first = record(&mut s, "pay", Some("k0".into()), json!({"n": 0, "a": 1}));
        let first = first.unwrap_or_else(|e| panic!("{e}"));
        for n in 1..RECEIVED_KEPT + 5 {
            let answered = record(&mut s, "pay", Some(format!("k{n}")), json!({"n": n}));
            assert!(answered.is_ok(), "{n}");
        }
        assert_eq!(s.received.len(), RECEIVED_KEPT, "the list is bounded");
        assert_eq!(s.total, RECEIVED_KEPT + 5, "every request is counted");
        assert_eq!(s.received.front().map(|r| r["body"]["n"].clone()), Some(json!(5)));
        // The same request under a used key gets the first answer and acts no more; another
        // request under it is refused.
        let again = record(&mut s, "pay", Some("k0".into()), json!({"a": 1, "n": 0}));
        assert_eq!(again.ok(), Some(first));
        assert_eq!(s.acted, RECEIVED_KEPT + 5);
        let other = record(&mut s, "pay", Some("k0".into()), json!({"n": 1}));
        assert_eq!(other, Err("k0".to_owned()));
        assert_eq!(s.answered.len(), RECEIVED_KEPT + 5);
    }

    #[test]
    fn a_sink_forgets_its_oldest_keys_beyond_the_bound() {
        let mut s = Sink::default();
        for n in 0..KEYS_KEPT + 3 {
            let answered = record(&mut s, "pay", Some(format!("k{n}")), json!({"n": n}));
            assert!(answered.is_ok(), "{n}");
        }
        assert_eq!((s.answered.len(), s.key_order.len()), (KEYS_KEPT, KEYS_KEPT));
        // k0 was forgotten: another request under it is new again, where k5 is still refused.
        assert!(record(&mut s, "pay", Some("k0".into()), json!({"other": true})).is_ok());
        let kept = record(&mut s, "pay", Some("k5".into()), json!({"other": true}));
        assert_eq!(kept, Err("k5".to_owned()));
    }

    #[test]
    fn the_process_keeps_a_bounded_number_of_sinks() {
        let sinks = Sinks::default();
        for n in 0..SINKS_KEPT {
            assert!(sinks.set_failing(&format!("s{n}"), false), "sink {n}");
        }
        assert!(!sinks.set_failing("one-more", true), "a sink beyond the bound was made");
        assert_eq!(sinks.counts("one-more"), (0, 0));
        assert!(sinks.set_failing("s0", true), "an existing sink still answers");
    }
}
