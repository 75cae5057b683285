//! Workflow and Session routes: `/runs` and `/sessions` (authenticated like actions).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use jadpo_core::model::workflow::kernel::KernelError;
use jadpo_core::model::workflow::rows::TransitionError;
use jadpo_engine::workflow::runs::{
    EngineError, cancel_run, find_run, post_event, run_events, start_run,
};
use jadpo_engine::workflow::session::{self, SessionError};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{HttpState, Problem, authenticate, store_problem};

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
        SessionError::NotAnObject => Problem::new(StatusCode::BAD_REQUEST, "Bad context", detail),
        SessionError::Store(s) => store_problem(s),
    }
}

fn state_json(state: &jadpo_core::model::workflow::state::ExecutionState) -> Value {
    serde_json::to_value(state).unwrap_or(Value::Null)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewRun {
    workflow: String,
    #[serde(default)]
    input: Value,
    session_id: Option<String>,
    user_id: Option<String>,
}

async fn create_run(State(state): State<HttpState>, headers: HeaderMap, bytes: Bytes) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let req: NewRun = body(&bytes)?;
        let session = match (&req.session_id, &req.user_id) {
            (Some(s), Some(u)) => Some((s.as_str(), u.as_str())),
            (None, _) => None,
            (Some(_), None) => {
                return Err(Problem::new(
                    StatusCode::BAD_REQUEST,
                    "Missing user_id",
                    "a run in a session needs its user_id",
                ));
            }
        };
        let run = start_run(&state.engine, &req.workflow, req.input, session)
            .await
            .map_err(|e| engine_problem(&e))?;
        Ok((
            StatusCode::CREATED,
            axum::Json(
                json!({"run_id": run.run_id, "status": run.status, "revision": run.revision}),
            ),
        ))
    };
    result.await.into_response()
}

async fn get_run(
    State(state): State<HttpState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let (_, run) = find_run(&state.engine, &id).await.map_err(|e| engine_problem(&e))?;
        Ok::<_, Problem>(axum::Json(state_json(&run)))
    };
    result.await.into_response()
}

async fn list_events(
    State(state): State<HttpState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let events = run_events(&state.engine, &id).await.map_err(|e| engine_problem(&e))?;
        let events: Vec<Value> = events
            .iter()
            .map(|e| json!({"id": e.id(&id), "seq": e.seq, "type": e.event_type, "payload": e.payload, "timestamp": e.timestamp}))
            .collect();
        Ok::<_, Problem>(axum::Json(json!({"events": events})))
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
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let req: NewEvent = body(&bytes)?;
        let run =
            post_event(&state.engine, &id, &req.event_type, req.payload, req.expected_revision)
                .await
                .map_err(|e| engine_problem(&e))?;
        Ok::<_, Problem>(axum::Json(state_json(&run)))
    };
    result.await.into_response()
}

async fn cancel(
    State(state): State<HttpState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let run = cancel_run(&state.engine, &id, "cancelled over HTTP")
            .await
            .map_err(|e| engine_problem(&e))?;
        Ok::<_, Problem>(axum::Json(state_json(&run)))
    };
    result.await.into_response()
}

fn sessions_store(state: &HttpState) -> Result<&std::sync::Arc<dyn jadpo_core::Store>, Problem> {
    let app = &state.engine.app;
    let name = app.workflow_stores().first().copied().unwrap_or(app.default_store()).to_owned();
    state.engine.store(&name).map_err(|e| store_problem(&e))
}

fn session_json(s: &jadpo_core::model::workflow::rows::SessionRecord) -> Value {
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
    user_id: String,
    #[serde(default = "empty_object")]
    context: Value,
}

fn empty_object() -> Value {
    json!({})
}

async fn create_session(
    State(state): State<HttpState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let req: NewSession = body(&bytes)?;
        if req.user_id.trim().is_empty() {
            return Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "Missing user_id",
                "user_id must not be empty",
            ));
        }
        let store = sessions_store(&state)?;
        let id = jadpo_core::id::new_id(state.engine.clock.as_ref()).to_string();
        let now = state.engine.clock.now();
        let context = req.context;
        let s = session::load_or_create_session(
            store.as_ref(),
            &id,
            &req.user_id,
            now,
            &registered(&state),
            move || context,
        )
        .await
        .map_err(|e| session_problem(&e))?;
        Ok((
            StatusCode::CREATED,
            axum::Json(
                json!({"id": s.id, "revision": s.revision, "context_revision": s.context_revision}),
            ),
        ))
    };
    result.await.into_response()
}

#[derive(Deserialize)]
struct Owner {
    user_id: Option<String>,
}

async fn get_session(
    State(state): State<HttpState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(owner): Query<Owner>,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let Some(user_id) = owner.user_id else {
            return Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "Missing user_id",
                "pass ?user_id=...",
            ));
        };
        let store = sessions_store(&state)?;
        let s = session::restore_session(store.as_ref(), &id, &user_id, &registered(&state))
            .await
            .map_err(|e| session_problem(&e))?;
        Ok(axum::Json(session_json(&s)))
    };
    result.await.into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextPatch {
    user_id: String,
    patch: Value,
    expected_revision: i64,
}

async fn patch_context(
    State(state): State<HttpState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Response {
    let result = async {
        authenticate(&state, &headers).await?;
        let req: ContextPatch = body(&bytes)?;
        let store = sessions_store(&state)?;
        let s = session::restore_session(store.as_ref(), &id, &req.user_id, &registered(&state))
            .await
            .map_err(|e| session_problem(&e))?;
        if s.revision != req.expected_revision {
            return Err(session_problem(&SessionError::Stale(id)));
        }
        let now = state.engine.clock.now();
        let s = session::update_context(store.as_ref(), &s, &req.patch, now)
            .await
            .map_err(|e| session_problem(&e))?;
        Ok(axum::Json(session_json(&s)))
    };
    result.await.into_response()
}
