//! The application the retention tests share: workflow `ship` (one quick capability, then
//! complete), its finished runs kept 10 days and its idle Sessions 2, Sessions bound to no run 5,
//! and housekeeping in batches of 2; and the helpers that make and read its rows.

#![allow(dead_code, reason = "each test binary uses part of this module")]

use std::time::Duration;

use async_trait::async_trait;
use jadpo_application::{
    Application, Capability, CapabilityContext, CommandRequest, HandlerError, WorkflowRetention,
};
use jadpo_core::Clock;
use jadpo_engine::EngineSettings;
use jadpo_engine::housekeeping::HousekeepingSettings;
use jadpo_engine::workflow::runs::{InSession, start_run};
use jadpo_engine::workflow::session::load_or_create_session;
use jadpo_test_env::{Env, Kind, count_where};
use jadpo_workflow::def::{Node, WorkflowDef};
use serde_json::{Value, json};

struct Done;

#[async_trait]
impl Capability for Done {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        _: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        Ok(json!({"packed": true}))
    }
}

fn ship() -> WorkflowDef {
    let pack = Node::Capability {
        capability: "pack".into(),
        inputs: Vec::new(),
        idempotency_key: None,
        output: "pack".into(),
        next: "done".into(),
        on_failure: None,
        compensate: None,
    };
    let def = WorkflowDef::builder("ship", "1", "pack").node("pack", pack);
    def.node("done", Node::Complete).build().unwrap_or_else(|e| panic!("{e}"))
}

const DAY: Duration = Duration::from_secs(86_400);

pub(crate) fn app() -> Application {
    let retention =
        WorkflowRetention { finished_runs: Some(DAY * 10), idle_sessions: Some(DAY * 2) };
    Application::builder("retention")
        .store("main")
        .capability("pack", Done)
        .workflow(ship(), "main")
        .workflow_retention("ship", retention)
        .unbound_session_retention(DAY * 5)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The same workflow with no retention declared at all.
pub(crate) fn app_without_retention() -> Application {
    let app = Application::builder("retention").store("main").capability("pack", Done);
    app.workflow(ship(), "main").build().unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) async fn env(kind: Kind) -> Env {
    env_of(kind, app()).await
}

/// An environment for `app`, housekeeping in batches of 2.
pub(crate) async fn env_of(kind: Kind, app: Application) -> Env {
    let housekeeping = HousekeepingSettings { batch_size: 2, ..HousekeepingSettings::default() };
    Env::new(kind, app, EngineSettings { housekeeping, ..EngineSettings::default() }).await
}

pub(crate) async fn session(env: &Env, id: &str) {
    let now = env.clock.now();
    let made =
        load_or_create_session(env.store("main").as_ref(), id, "alice", now, &|_| true, || {
            json!({})
        });
    made.await.unwrap_or_else(|e| panic!("{e}"));
}

pub(crate) async fn start(env: &Env, session: Option<&str>) -> String {
    let session = session.map(|id| InSession::OfUser { id, user: "alice", rebind: false });
    let run = start_run(&env.engine, "ship", json!({}), session, None).await;
    run.unwrap_or_else(|e| panic!("{e}")).run_id
}

pub(crate) async fn of_run(env: &Env, table: &str, run: &str) -> i64 {
    let sql = format!("SELECT count(*) AS n FROM {table} WHERE run_id = $1");
    count_where(env, "main", &sql, run).await.unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) async fn session_row(env: &Env, id: &str) -> Option<(Option<String>, i64)> {
    let s = env.store("main").session_get(id).await.unwrap_or_else(|e| panic!("{e}"));
    s.map(|s| (s.active_run_id, s.revision))
}
