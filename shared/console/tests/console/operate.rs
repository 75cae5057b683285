//! The console's other pages over the sample shop, on both adapters: runs (list, state,
//! timeline, Cancel), schedules (Pause, Resume, Trigger, runs), breakers (Open, Close), flags
//! (Set, history), an order's audit trail and the operator actions log. Every page refuses no
//! one (401), every change refuses a form without the session's token (403) and each refusal of
//! the use case changes nothing; each change made lands as an operator action (or, for a flag,
//! a flag change) with the console operator's name.

use crate::common;

use axum::http::StatusCode;
use jadpo_core::model::breaker::State as BreakerState;
use jadpo_core::model::operator::ActionFilter;
use jadpo_engine::commit::commit_unsent;
use jadpo_engine::workflow::runs::start_run;
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::json;

use common::{open, send, sign_in};

const PAGES: [&str; 9] = [
    "/console/runs",
    "/console/runs/r-1",
    "/console/schedules",
    "/console/schedules/sales_summary",
    "/console/breakers",
    "/console/flags",
    "/console/flags/receipt_survey",
    "/console/audit",
    "/console/actions",
];

const CHANGES: [&str; 7] = [
    "/console/runs/r-1/cancel",
    "/console/schedules/sales_summary/pause",
    "/console/schedules/sales_summary/trigger",
    "/console/breakers/mailer/open",
    "/console/breakers/mailer/close",
    "/console/breakers/mailer/release",
    "/console/flags/receipt_survey",
];

async fn recorded(env: &Env) -> Vec<(String, String, String)> {
    let filter = ActionFilter { limit: 50, ..ActionFilter::default() };
    let found = env.store("main").operator_actions(&filter).await.unwrap_or_else(|e| panic!("{e}"));
    let mut all: Vec<_> = found.into_iter().map(|a| (a.action, a.item, a.operator)).collect();
    all.sort();
    all
}

async fn run_status(env: &Env, id: &str) -> ExecutionStatus {
    let run = env.store("main").execution_get(id).await.unwrap_or_else(|e| panic!("{e}"));
    run.unwrap_or_else(|| panic!("no run {id}")).status
}

async fn runs_are_listed_read_and_cancelled(kind: Kind) {
    let mut env = Env::shop(kind).await;
    let console = open(&env);
    for path in PAGES {
        let got = send(&console, "GET", path, None, "").await;
        assert_eq!(got.status, StatusCode::UNAUTHORIZED, "{kind:?}: {path} read by no one");
    }
    for path in CHANGES {
        let got = send(&console, "POST", path, None, "csrf=x&reason=x&rollout=on").await;
        assert_eq!(got.status, StatusCode::UNAUTHORIZED, "{kind:?}: {path} changed by no one");
    }
    let (cookie, csrf) = sign_in(&console).await;
    let c = Some(cookie.as_str());
    let run = start_run(&env.engine, "checkout", json!({"order_id": "o-9"}), None, None).await;
    let id = run.unwrap_or_else(|e| panic!("{e}")).run_id;

    let list = send(&console, "GET", "/console/runs", c, "").await;
    assert!(list.text.contains(&format!(">{id}</a>")), "{kind:?}: {}", list.text);
    let none = send(&console, "GET", "/console/runs?status=completed", c, "").await;
    assert!(none.text.contains("No runs match."), "{kind:?}");
    for bad in ["status=lost", "store=nowhere"] {
        let got = send(&console, "GET", &format!("/console/runs?{bad}"), c, "").await;
        assert!(got.status.is_client_error(), "{kind:?}: {bad}: {}", got.status);
    }
    let shown = send(&console, "GET", &format!("/console/runs/{id}"), c, "").await;
    assert!(shown.text.contains("run.started") && shown.text.contains("o-9"), "{kind:?}");
    let missing = send(&console, "GET", "/console/runs/r-1", c, "").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{kind:?}");

    let cancel = format!("/console/runs/{id}/cancel");
    let forged = send(&console, "POST", &cancel, c, "reason=stuck").await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{kind:?}: no token");
    let blank = send(&console, "POST", &cancel, c, &format!("csrf={csrf}&reason=+")).await;
    assert_eq!(blank.status, StatusCode::BAD_REQUEST, "{kind:?}: a cancel needs a reason");
    assert!(!run_status(&env, &id).await.is_terminal(), "{kind:?}: nothing changed");
    assert!(recorded(&env).await.is_empty(), "{kind:?}: nothing recorded");
    let done = send(&console, "POST", &cancel, c, &format!("csrf={csrf}&reason=stuck+order")).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{kind:?}: {}", done.text);
    // Its reserve step was in flight: the run is cancelling until it answers, then compensated.
    assert_eq!(run_status(&env, &id).await, ExecutionStatus::Cancelling, "{kind:?}");
    let mid = send(&console, "GET", &format!("/console/runs/{id}"), c, "").await;
    assert!(mid.text.contains("Cancelling: compensations run"), "{kind:?}");
    assert!(env.settle().await.is_empty(), "{kind:?}");
    assert_eq!(run_status(&env, &id).await, ExecutionStatus::Cancelled, "{kind:?}");
    let timeline =
        send(&console, "GET", &format!("/console/runs/{id}?done=cancelled"), c, "").await;
    assert!(timeline.text.contains("Done: cancelled"), "{kind:?}");
    assert!(timeline.text.contains("stuck order"), "{kind:?}: the reason is in the timeline");
    assert!(!timeline.text.contains("Cancel the run"), "{kind:?}: a finished run has no Cancel");
    let again = send(&console, "POST", &cancel, c, &format!("csrf={csrf}&reason=again")).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{kind:?}: {}", again.text);
    assert_eq!(
        recorded(&env).await,
        [("run.cancel".to_owned(), id.clone(), "ops-alice".to_owned())],
        "{kind:?}"
    );
    let cancelled = send(&console, "GET", "/console/runs?status=cancelled", c, "").await;
    assert!(cancelled.text.contains(&format!(">{id}</a>")), "{kind:?}");
    let overview = send(&console, "GET", "/console/", c, "").await;
    assert!(overview.text.contains("Workflow runs"), "{kind:?}");
    assert!(overview.text.contains("/console/runs?store=main&amp;status=cancelled\">1<"));
}

#[tokio::test]
async fn runs_are_listed_read_and_cancelled_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        runs_are_listed_read_and_cancelled(kind).await;
    }
}

async fn schedules_breakers_flags_and_the_record(kind: Kind) {
    let env = Env::shop(kind).await;
    let console = open(&env);
    let (cookie, csrf) = sign_in(&console).await;
    let c = Some(cookie.as_str());
    let form = format!("csrf={csrf}");
    let post = |path: &'static str, body: String| {
        let console = &console;
        async move { send(console, "POST", path, c, &body).await }
    };

    // Schedules.
    let listed = send(&console, "GET", "/console/schedules", c, "").await;
    assert!(listed.text.contains("sales_summary"), "{kind:?}: {}", listed.text);
    let forged = post("/console/schedules/sales_summary/pause", String::new()).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{kind:?}");
    let paused = post("/console/schedules/sales_summary/pause", form.clone()).await;
    assert_eq!(paused.status, StatusCode::SEE_OTHER, "{kind:?}: {}", paused.text);
    let page = send(&console, "GET", "/console/schedules/sales_summary", c, "").await;
    assert!(page.text.contains("<td id=\"schedule-state\">paused</td>"), "{kind:?}");
    let twice = post("/console/schedules/sales_summary/pause", form.clone()).await;
    assert_eq!(twice.status, StatusCode::CONFLICT, "{kind:?}: already paused");
    let resumed = post("/console/schedules/sales_summary/resume", form.clone()).await;
    assert_eq!(resumed.status, StatusCode::SEE_OTHER, "{kind:?}");
    let triggered = post("/console/schedules/sales_summary/trigger", form.clone()).await;
    assert_eq!(triggered.status, StatusCode::SEE_OTHER, "{kind:?}");
    let page = send(&console, "GET", "/console/schedules/sales_summary", c, "").await;
    assert!(page.text.contains("<td id=\"schedule-state\">active</td>"), "{kind:?}");
    assert!(page.text.contains("<td>operator</td>"), "{kind:?}: the triggered run is listed");
    let unknown = send(&console, "GET", "/console/schedules/nightly", c, "").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{kind:?}");
    let bad_verb = post("/console/schedules/sales_summary/delete", form.clone()).await;
    assert_eq!(bad_verb.status, StatusCode::NOT_FOUND, "{kind:?}");

    // Breakers.
    let opened = post("/console/breakers/mailer/open", form.clone()).await;
    assert_eq!(opened.status, StatusCode::SEE_OTHER, "{kind:?}: {}", opened.text);
    let breakers = env.store("main").breakers_list().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(breakers.iter().any(|b| b.connection == "mailer" && b.state == BreakerState::Open));
    let page = send(&console, "GET", "/console/breakers", c, "").await;
    assert!(page.text.contains("<td class=\"dead\">open</td>"), "{kind:?}: {}", page.text);
    let closed = post("/console/breakers/mailer/close", form.clone()).await;
    assert_eq!(closed.status, StatusCode::SEE_OTHER, "{kind:?}");
    let released = post("/console/breakers/mailer/release", form.clone()).await;
    assert_eq!(released.status, StatusCode::SEE_OTHER, "{kind:?}: {}", released.text);
    let location = released.headers.get("location").and_then(|l| l.to_str().ok());
    assert!(location.is_some_and(|l| l.contains("0+held+deliveries+of+mailer+released")));
    let held = send(&console, "GET", "/console/deliveries?held=mailer&status=pending", c, "").await;
    assert!(held.text.contains("No deliveries match."), "{kind:?}: {}", held.text);
    let nowhere = post("/console/breakers/fax/release", form.clone()).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND, "{kind:?}: an undeclared connection");
    let nowhere = post("/console/breakers/fax/open", form.clone()).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND, "{kind:?}: an undeclared connection");

    // Flags.
    let bad = post("/console/flags/receipt_survey", format!("{form}&rollout=lots")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{kind:?}");
    let set = post("/console/flags/receipt_survey", format!("{form}&rollout=25%25")).await;
    assert_eq!(set.status, StatusCode::SEE_OTHER, "{kind:?}: {}", set.text);
    let page = send(&console, "GET", "/console/flags/receipt_survey", c, "").await;
    assert!(page.text.contains("<strong id=\"flag-state\">25%</strong>"), "{kind:?}");
    assert!(page.text.contains("<td>off</td><td>25%</td><td>ops-alice</td>"), "{kind:?}");
    let undeclared = post("/console/flags/dark_mode", format!("{form}&rollout=on")).await;
    assert_eq!(undeclared.status, StatusCode::NOT_FOUND, "{kind:?}");

    // An order's audit trail.
    let body = json!({"customer": "c1", "items": [{"sku": "A", "qty": 2}]});
    let placed = commit_unsent(&env.engine, jadpo_test_env::request("place_order", body)).await;
    let order = placed.unwrap_or_else(|e| panic!("{e}")).body["order_id"].clone();
    let order = order.as_str().unwrap_or_default();
    let path = format!("/console/audit?entity=order&id={order}");
    let trail = send(&console, "GET", &path, c, "").await;
    assert!(trail.text.contains("<td>insert</td>") && trail.text.contains("place_order"));
    let empty = send(&console, "GET", "/console/audit?entity=order&id=o-none", c, "").await;
    assert!(empty.text.contains("No changes recorded"), "{kind:?}");
    let unknown = send(&console, "GET", "/console/audit?entity=invoice&id=1", c, "").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{kind:?}");

    // The operator actions log: each change above, by the console's operator.
    let expected = [
        ("breaker.close", "mailer"),
        ("breaker.open", "mailer"),
        ("delivery.release", "mailer"),
        ("schedule.pause", "sales_summary"),
        ("schedule.resume", "sales_summary"),
        ("schedule.trigger", "sales_summary"),
    ];
    let got = recorded(&env).await;
    let got: Vec<(&str, &str)> = got
        .iter()
        .inspect(|(_, _, who)| assert_eq!(who, "ops-alice", "{kind:?}"))
        .map(|(a, i, _)| (a.as_str(), i.as_str()))
        .collect();
    assert_eq!(got, expected, "{kind:?}");
    let log = send(&console, "GET", "/console/actions", c, "").await;
    for (action, _) in expected {
        assert!(log.text.contains(&format!("<td>{action}</td>")), "{kind:?}: {action}");
    }
    let only = send(&console, "GET", "/console/actions?kind=breaker", c, "").await;
    assert!(only.text.contains("breaker.open") && !only.text.contains("schedule.pause"));
}

#[tokio::test]
async fn schedules_breakers_flags_and_the_record_on_both() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        schedules_breakers_flags_and_the_record(kind).await;
    }
}
