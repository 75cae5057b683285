//! Workflow and Session routes: `/runs` and `/sessions`. Each acts for the request's principal
//! ([`Caller`]): what it creates is recorded as the principal's, and a run or Session of any other
//! principal answers 404 on every route, as if it did not exist.

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use jadpo_core::model::principal::Principal;
use jadpo_core::model::service_key::Scope;
use jadpo_core::ports::TransitionError;
use jadpo_engine::digest::request_digest;
use jadpo_engine::workflow::runs::{
    EngineError, InSession, StartKey, Started, cancel_run, check_owned_run, find_owned_run, parked,
    post_event, run_events_page, start_run, start_run_once, started_response,
};
use jadpo_engine::workflow::session::{self, SessionError};
use jadpo_workflow::kernel::KernelError;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Caller, HttpState, Problem, admitted, store_problem};

/// The routes, to merge into the commit router.
pub(super) fn routes() -> Router<HttpState> {
    Router::new()
        .route("/runs", post(create_run))
        .route("/runs/{id}", get(get_run))
        .route("/runs/{id}/events", get(list_events).post(add_event))
        .route("/runs/{id}/cancel", post(cancel))
        .route("/sessions", post(create_session))
        .route("/sessions/{id}", get(get_session))
        .route("/sessions/{id}/context", patch(patch_context))
}

fn body<T: for<'de> Deserialize<'de>>(bytes: &Bytes) -> Result<T, Problem> {
    serde_json::from_slice(bytes)
        .map_err(|e| Problem::new(StatusCode::BAD_REQUEST, "Malformed JSON", e.to_string()))
}

fn engine_problem(e: &EngineError) -> Problem {
    let detail = e.to_string();
    match e {
        EngineError::NotFound(_) => Problem::new(StatusCode::NOT_FOUND, "Run not found", detail),
        EngineError::UnknownWorkflow(_) => {
            Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "Unknown workflow", detail)
        }
        EngineError::Stale { .. } => Problem::new(StatusCode::CONFLICT, "Stale revision", detail),
        EngineError::Parked(_) => Problem::new(StatusCode::CONFLICT, "Run parked", detail),
        EngineError::NoReason => Problem::new(StatusCode::BAD_REQUEST, "No reason", detail),
        EngineError::KeyReused(_) => {
            Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "Idempotency-Key reused", detail)
        }
        EngineError::Rejected(KernelError::Unexpected(_) | KernelError::Terminal(_)) => {
            Problem::new(StatusCode::CONFLICT, "Event does not fit the run", detail)
        }
        EngineError::Rejected(_) => {
            Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "Workflow definition error", detail)
        }
        EngineError::Session(s) => session_problem(s),
        EngineError::Transition(TransitionError::Store(s)) | EngineError::Store(s) => {
            store_problem(s)
        }
        EngineError::Transition(_) => Problem::new(StatusCode::CONFLICT, "Conflict", detail),
    }
}

fn session_problem(e: &SessionError) -> Problem {
    let detail = e.to_string();
    match e {
        SessionError::NotFound(_) => {
            Problem::new(StatusCode::NOT_FOUND, "Session not found", detail)
        }
        SessionError::Stale(_) => Problem::new(StatusCode::CONFLICT, "Stale revision", detail),
        SessionError::BrokenBinding { .. } => {
            Problem::new(StatusCode::CONFLICT, "Broken session binding", detail)
        }
        SessionError::Bound { .. } => Problem::new(StatusCode::CONFLICT, "Session bound", detail),
        SessionError::NotAnObject => Problem::new(StatusCode::BAD_REQUEST, "Bad context", detail),
        SessionError::TooLarge { .. } => {
            Problem::new(StatusCode::PAYLOAD_TOO_LARGE, "Context too large", detail)
        }
        SessionError::Store(s) => store_problem(s),
    }
}

fn state_json(state: &jadpo_workflow::state::ExecutionState) -> Value {
    serde_json::to_value(state).unwrap_or(Value::Null)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewRun {
    workflow: String,
    #[serde(default)]
    input: Value,
    session_id: Option<String>,
    /// Bind the Session to the new run even while its run has not finished.
    #[serde(default)]
    rebind: bool,
}

async fn create_run(
    State(state): State<HttpState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    bytes: Bytes,
) -> Response {
    let result = async {
        caller.may(&Scope::Runs)?;
        let principal = &caller.principal;
        let key = super::idempotency_key(&headers)?;
        let whole: Value = body(&bytes)?;
        let req: NewRun = serde_json::from_value(whole.clone())
            .map_err(|e| Problem::new(StatusCode::BAD_REQUEST, "Malformed JSON", e.to_string()))?;
        if let Some(callers) = state.engine.app.workflow_callers(&req.workflow) {
            admitted(Some(&caller), callers, &format!("workflow {:?}", req.workflow))?;
        }
        // The Session must be the caller's; its user is the Session's own, never the request's.
        let rebind = req.rebind;
        let session =
            req.session_id.as_deref().map(|id| InSession::OwnedBy { id, principal, rebind });
        let engine = &state.engine;
        let Some(key) = key else {
            let run = start_run(engine, &req.workflow, req.input, session, Some(principal))
                .await
                .map_err(|e| engine_problem(&e))?;
            let (status, body) = started_response(&run);
            return Ok(answer(status, body, false));
        };
        let digest = request_digest("POST", "/runs", &whole);
        let scope = super::caller_name(Some(principal));
        let key = StartKey { scope: &scope, key: &key, digest: &digest };
        let started =
            start_run_once(engine, &req.workflow, req.input, session, Some(principal), key)
                .await
                .map_err(|e| engine_problem(&e))?;
        Ok::<_, Problem>(match started {
            Started::New { status, body } => answer(status, body, false),
            Started::Replayed { status, body } => answer(status, body, true),
        })
    };
    result.await.into_response()
}

/// A start's answer; a replayed one says so in `Idempotency-Replayed`, as an action's does.
fn answer(status: u16, body: Value, replayed: bool) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::CREATED);
    let mut response = (status, axum::Json(body)).into_response();
    if replayed {
        let value = axum::http::HeaderValue::from_static("true");
        response.headers_mut().insert("idempotency-replayed", value);
    }
    response
}

async fn get_run(
    State(state): State<HttpState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        caller.may(&Scope::Runs)?;
        let principal = &caller.principal;
        let (_, run) =
            find_owned_run(&state.engine, &id, principal).await.map_err(|e| engine_problem(&e))?;
        let mut body = state_json(&run);
        if let Some(object) = body.as_object_mut() {
            object.insert("parked".to_owned(), json!(parked(&state.engine, &run)));
        }
        Ok::<_, Problem>(axum::Json(body))
    };
    result.await.into_response()
}

/// Events per page of `GET /runs/{id}/events` unless `limit` says otherwise, and the most.
const EVENTS_PAGE: u32 = 100;
const EVENTS_PAGE_MAX: u32 = 1000;

/// `?after=SEQ&limit=N` of `GET /runs/{id}/events`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsPage {
    #[serde(default)]
    after: u64,
    limit: Option<u32>,
}

fn events_page(query: Result<Query<EventsPage>, QueryRejection>) -> Result<(u64, u32), Problem> {
    let bad = |detail: String| Problem::new(StatusCode::BAD_REQUEST, "Bad query", detail);
    let Query(page) = query.map_err(|e| bad(format!("{e}: expected ?after=SEQ&limit=N")))?;
    let limit = page.limit.unwrap_or(EVENTS_PAGE);
    if !(1..=EVENTS_PAGE_MAX).contains(&limit) {
        return Err(bad(format!("limit must be 1 to {EVENTS_PAGE_MAX}, not {limit}")));
    }
    Ok((page.after, limit))
}

async fn list_events(
    State(state): State<HttpState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<EventsPage>, QueryRejection>,
) -> Response {
    let result = async {
        caller.may(&Scope::Runs)?;
        let (after, limit) = events_page(query)?;
        let principal = &caller.principal;
        check_owned_run(&state.engine, &id, principal).await.map_err(|e| engine_problem(&e))?;
        let events = run_events_page(&state.engine, &id, after, limit)
            .await
            .map_err(|e| engine_problem(&e))?;
        // A full page may have more after it; a short one is the end.
        let next = match events.last() {
            Some((last, _)) if events.len() == limit as usize => json!(last.seq),
            _ => Value::Null,
        };
        let events: Vec<Value> = events
            .iter()
            .map(|(e, actor)| json!({"id": e.id(&id), "seq": e.seq, "type": e.event_type, "payload": e.payload, "timestamp": e.timestamp, "actor": actor}))
            .collect();
        Ok::<_, Problem>(axum::Json(json!({"events": events, "next": next})))
    };
    result.await.into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewEvent {
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    payload: Value,
    expected_revision: u64,
}

async fn add_event(
    State(state): State<HttpState>,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Response {
    let result = async {
        caller.may(&Scope::Runs)?;
        let principal = &caller.principal;
        check_owned_run(&state.engine, &id, principal).await.map_err(|e| engine_problem(&e))?;
        let req: NewEvent = body(&bytes)?;
        let run = post_event(
            &state.engine,
            &id,
            &req.event_type,
            req.payload,
            req.expected_revision,
            Some(principal),
        )
        .await
        .map_err(|e| engine_problem(&e))?;
        let mut body = state_json(&run);
        if let Some(object) = body.as_object_mut() {
            object.insert("parked".to_owned(), json!(parked(&state.engine, &run)));
        }
        Ok::<_, Problem>(axum::Json(body))
    };
    result.await.into_response()
}

async fn cancel(
    State(state): State<HttpState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        caller.may(&Scope::Runs)?;
        let principal = &caller.principal;
        check_owned_run(&state.engine, &id, principal).await.map_err(|e| engine_problem(&e))?;
        let run = cancel_run(&state.engine, &id, "cancelled over HTTP", Some(principal))
            .await
            .map_err(|e| engine_problem(&e))?;
        let mut body = state_json(&run);
        if let Some(object) = body.as_object_mut() {
            object.insert("parked".to_owned(), json!(parked(&state.engine, &run)));
        }
        Ok::<_, Problem>(axum::Json(body))
    };
    result.await.into_response()
}

fn sessions_store(state: &HttpState) -> Result<&std::sync::Arc<dyn jadpo_core::Store>, Problem> {
    let app = &state.engine.app;
    let name = app.workflow_stores().first().copied().unwrap_or(app.default_store()).to_owned();
    state.engine.store(&name).map_err(|e| store_problem(&e))
}

fn session_json(s: &jadpo_workflow::rows::SessionRecord) -> Value {
    json!({
        "id": s.id, "user_id": s.user_id, "context": s.context, "active_run_id": s.active_run_id,
        "revision": s.revision, "context_revision": s.context_revision,
    })
}

fn registered(state: &HttpState) -> impl Fn(&str) -> bool + '_ {
    |id: &str| state.engine.app.workflow(id).is_some()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewSession {
    /// Only a service names the user it acts for; a user's Session is their own.
    user_id: Option<String>,
    #[serde(default = "empty_object")]
    context: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// The user a new Session is for: a signed-in user's own id, or the one a service names.
fn session_user(principal: &Principal, named: Option<String>) -> Result<String, Problem> {
    let bad = |detail: &str| Problem::new(StatusCode::BAD_REQUEST, "Bad user_id", detail);
    match (principal, named) {
        (Principal::User(id), None) => Ok(id.clone()),
        (Principal::User(_), Some(_)) => {
            Err(bad("a signed-in user's Session is their own: leave user_id out"))
        }
        (Principal::Service(_), Some(u)) if !u.trim().is_empty() => Ok(u),
        (Principal::Service(_), _) => Err(bad("a service names the user it acts for in user_id")),
    }
}

async fn create_session(State(state): State<HttpState>, caller: Caller, bytes: Bytes) -> Response {
    let result = async {
        caller.may(&Scope::Sessions)?;
        let principal = &caller.principal;
        let req: NewSession = body(&bytes)?;
        let user_id = session_user(principal, req.user_id)?;
        let store = sessions_store(&state)?;
        let id = jadpo_core::id::new_id(state.engine.clock.as_ref()).to_string();
        let now = state.engine.clock.now();
        let s = session::create_owned_session(
            store.as_ref(),
            &id,
            &user_id,
            principal,
            now,
            req.context,
        )
        .await
        .map_err(|e| session_problem(&e))?;
        Ok::<_, Problem>((
            StatusCode::CREATED,
            axum::Json(
                json!({"id": s.id, "revision": s.revision, "context_revision": s.context_revision}),
            ),
        ))
    };
    result.await.into_response()
}

async fn get_session(
    State(state): State<HttpState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        caller.may(&Scope::Sessions)?;
        let principal = &caller.principal;
        let store = sessions_store(&state)?;
        let s = session::restore_owned(store.as_ref(), &id, principal, &registered(&state))
            .await
            .map_err(|e| session_problem(&e))?;
        Ok::<_, Problem>(axum::Json(session_json(&s)))
    };
    result.await.into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextPatch {
    patch: Value,
    expected_revision: i64,
}

async fn patch_context(
    State(state): State<HttpState>,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Response {
    let result = async {
        caller.may(&Scope::Sessions)?;
        let principal = &caller.principal;
        let store = sessions_store(&state)?;
        let s = session::restore_owned(store.as_ref(), &id, principal, &registered(&state))
            .await
            .map_err(|e| session_problem(&e))?;
        let req: ContextPatch = body(&bytes)?;
        if s.revision != req.expected_revision {
            return Err(session_problem(&SessionError::Stale(id)));
        }
        let now = state.engine.clock.now();
        let s = session::update_context(store.as_ref(), &s, &req.patch, now)
            .await
            .map_err(|e| session_problem(&e))?;
        Ok::<_, Problem>(axum::Json(session_json(&s)))
    };
    result.await.into_response()
}
