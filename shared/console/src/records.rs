//! What the console reads back of the record: feature flags (their state, Set through
//! [`FlagOps`] as `jadpo flags set` does, and each flag's history), a record's audit trail
//! (`jadpo audit show`), and the operator actions log (`jadpo actions list`) — every change made
//! from here or from the CLI, newest first, with who made it and under which database role.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use jadpo_core::model::flags::Rollout;
use jadpo_core::model::operator::ActionFilter;
use jadpo_engine::operate::flags::{FlagOpError, FlagOps};
use maud::html;
use serde::{Deserialize, Serialize};

use crate::access::Signed;
use crate::filter::given;
use crate::layout::{maybe, page, unavailable, when};
use crate::{ConsoleState, csrf_refusal};

/// How many entries a history, a trail or the log shows.
const MOST: u32 = 200;

pub(crate) fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/console/flags", get(flags))
        .route("/console/flags/{name}", get(flag).post(set_flag))
        .route("/console/audit", get(audit))
        .route("/console/actions", get(actions))
}

/// `GET /console/flags`: every declared flag's state, and stored ones no longer declared.
async fn flags(State(state): State<ConsoleState>, signed: axum::Extension<Signed>) -> Response {
    let list = match FlagOps::new(&state.engine).list().await {
        Ok(list) => list,
        Err(e) => return unavailable(&state, &signed, "Feature flags", &e),
    };
    let body = html! {
        @if list.is_empty() { p.note { "The application declares no flags." } } @else {
            table {
                tr { th { "flag" } th { "state" } th { "last changed" } th { "by" } }
                @for (name, rollout, stored) in &list {
                    tr {
                        td { a href={ "/console/flags/" (name) } { (name) } }
                        td { (rollout.describe()) }
                        td { (maybe(stored.as_ref().map(|s| s.updated_at))) }
                        td { (stored.as_ref().map_or("(declared default)", |s| s.updated_by.as_str())) }
                    }
                }
            }
        }
    };
    page(&state, &signed, "Feature flags", body).into_response()
}

#[derive(Deserialize, Default)]
struct Done {
    done: Option<String>,
}

/// `GET /console/flags/{name}`: its state, Set, and its history.
async fn flag(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(name): Path<String>,
    query: Result<Query<Done>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let ops = FlagOps::new(&state.engine);
    let title = format!("Flag {name}");
    let (list, history) = match (ops.list().await, ops.history(&name, MOST).await) {
        (Ok(list), Ok(history)) => (list, history),
        (Err(e), _) | (_, Err(e)) => return unavailable(&state, &signed, &title, &e),
    };
    let Some((_, rollout, _)) = list.iter().find(|(n, _, _)| *n == name) else {
        let body = html! { p.error { "The application declares no flag " (name) "." } };
        return (StatusCode::NOT_FOUND, page(&state, &signed, &title, body)).into_response();
    };
    let body = html! {
        @if let Some(done) = query.ok().and_then(|Query(d)| d.done) { p.flash { "Done: " (done) "." } }
        p { "Now " strong id="flag-state" { (rollout.describe()) } "." }
        form method="post" action={ "/console/flags/" (name) } {
            input type="hidden" name="csrf" value=(signed.csrf);
            label { "set to " input name="rollout" placeholder="on, off or 25%" required; }
            " " button type="submit" { "Set" }
        }
        h2 { "History" }
        @if history.is_empty() { p.note { "Never changed." } } @else {
            table {
                tr { th { "when" } th { "before" } th { "after" } th { "operator" } th { "database role" } }
                @for c in &history {
                    tr { td { (when(c.changed_at)) } td { (c.before) } td { (c.after) } td { (c.operator) } td { (c.db_role) } }
                }
            }
        }
    };
    page(&state, &signed, &title, body).into_response()
}

#[derive(Deserialize)]
struct SetForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    rollout: String,
}

/// `POST /console/flags/{name}` with `rollout`.
async fn set_flag(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    Path(name): Path<String>,
    axum::Form(form): axum::Form<SetForm>,
) -> Response {
    if let Some(refusal) = csrf_refusal(&signed, &form.csrf) {
        return refusal;
    }
    let back = format!("/console/flags/{name}");
    let refuse = |status, text: String| {
        let body = html! { p.error { "Refused, nothing changed: " (text) } p { a href=(back) { "Back" } } };
        (status, page(&state, &signed, "Not done", body)).into_response()
    };
    let rollout = match Rollout::parse(&form.rollout) {
        Ok(r) => r,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match FlagOps::new(&state.engine).set(&name, rollout, &signed.operator).await {
        Ok(changed) => {
            let done = if changed.is_some() { "set" } else { "it already had that state" };
            let query = serde_urlencoded::to_string([("done", done)]).unwrap_or_default();
            Redirect::to(&format!("{back}?{query}")).into_response()
        }
        Err(e @ FlagOpError::Unknown { .. }) => refuse(StatusCode::NOT_FOUND, e.to_string()),
        Err(e) => refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

#[derive(Deserialize, Serialize, Default)]
struct AuditQuery {
    entity: Option<String>,
    id: Option<String>,
}

/// `GET /console/audit?entity=E&id=ID`: the record's audit trail, oldest first.
async fn audit(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    let specs = state.engine.app.audited();
    let (entity, id) = (given(q.entity.as_ref()), given(q.id.as_ref()));
    let form = html! {
        form method="get" action="/console/audit" {
            label { "entity " select name="entity" { @for s in specs { option selected[entity.as_deref() == Some(s.entity.as_str())] { (s.entity) } } } }
            " " label { "record id " input name="id" value=(id.as_deref().unwrap_or("")) required; }
            " " button type="submit" { "Show" }
        }
    };
    let (Some(entity), Some(id)) = (entity, id) else {
        let body = html! { @if specs.is_empty() { p.note { "The application audits no entity." } } @else { (form) } };
        return page(&state, &signed, "Audit trail", body).into_response();
    };
    let Some(spec) = state.engine.app.audit_spec(&entity) else {
        let body = html! { (form) p.error { "The application audits no entity " (entity) "." } };
        return (StatusCode::NOT_FOUND, page(&state, &signed, "Audit trail", body)).into_response();
    };
    let rows = match state.engine.store(&spec.store) {
        Ok(store) => store.audit_rows(&spec.entity, &id).await,
        Err(e) => Err(e),
    };
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => return unavailable(&state, &signed, "Audit trail", &e),
    };
    let body = html! {
        (form)
        @if rows.is_empty() { p.note { "No changes recorded for " (entity) " " (id) "." } } @else {
            table {
                tr { th { "seq" } th { "when" } th { "change" } th { "by" } th { "action" } th { "request" } th { "fields" } }
                @for r in &rows {
                    tr {
                        td { (r.seq) } td { (when(r.changed_at)) } td { (r.kind) } td { (r.actor) @if let Some(role) = &r.db_role { " (role " (role) ")" } }
                        td { (r.action.as_deref().unwrap_or("")) } td { (r.request_id.as_deref().unwrap_or("")) }
                        td { @if let Some(why) = &r.unreadable { span.dead { (why) } } @else { code { (r.changes.to_string()) } } }
                    }
                }
            }
        }
    };
    page(&state, &signed, &format!("Audit trail of {entity} {id}"), body).into_response()
}

#[derive(Deserialize, Serialize, Default)]
struct ActionQuery {
    store: Option<String>,
    kind: Option<String>,
    item: Option<String>,
    operator: Option<String>,
}

/// `GET /console/actions`: the operator actions log of one store, newest first, filtered.
async fn actions(
    State(state): State<ConsoleState>,
    signed: axum::Extension<Signed>,
    query: Result<Query<ActionQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = query.map(|Query(q)| q).unwrap_or_default();
    let names: Vec<&String> = state.engine.stores.keys().collect();
    let store_name =
        given(q.store.as_ref()).unwrap_or_else(|| state.engine.app.default_store().to_owned());
    let field = |v: &Option<String>| v.clone().unwrap_or_default();
    let form = html! {
        form method="get" action="/console/actions" {
            label { "store " select name="store" { @for s in &names { option selected[**s == store_name] { (s) } } } }
            " " label { "kind " input name="kind" placeholder="delivery, run, schedule, breaker…" value=(field(&q.kind)); }
            " " label { "item " input name="item" value=(field(&q.item)); }
            " " label { "operator " input name="operator" value=(field(&q.operator)); }
            " " button type="submit" { "Show" }
        }
    };
    let filter = ActionFilter {
        item_kind: given(q.kind.as_ref()),
        item: given(q.item.as_ref()),
        operator: given(q.operator.as_ref()),
        since: None,
        limit: MOST,
    };
    let rows = match state.engine.store(&store_name) {
        Ok(store) => store.operator_actions(&filter).await,
        Err(e) => Err(e),
    };
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) => {
            let body = html! { (form) p.error { "The store did not answer: " (e) } };
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                page(&state, &signed, "Operator actions", body),
            )
                .into_response();
        }
    };
    let body = html! {
        (form)
        p.note { "The newest " (MOST) " at most." }
        @if rows.is_empty() { p.note { "No actions recorded." } } @else {
            table id="actions" {
                tr { th { "when" } th { "action" } th { "item" } th { "operator" } th { "database role" } th { "detail" } }
                @for a in &rows {
                    tr {
                        td { (when(a.acted_at)) } td { (a.action) } td { (a.item_kind) " " (a.item) }
                        td { (a.operator) @if let Some(account) = &a.os_account { " (" (account) ")" } }
                        td { (a.db_role) } td { (a.detail.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    };
    page(&state, &signed, "Operator actions", body).into_response()
}
