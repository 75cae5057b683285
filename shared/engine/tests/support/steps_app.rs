//! The application the tests of commands run back to back share: workflow `steps`, a sequence
//! of no-op steps, and what it leaves behind.

#![allow(dead_code, reason = "each test binary uses part of this module")]

use jadpo_application::{Application, Capability, CapabilityContext, CommandRequest, HandlerError};
use jadpo_test_env::Env;
use jadpo_workflow::def::{Node, WorkflowDef};
use serde_json::{Value, json};

/// Returns its node's id: a no-op step.
struct Step;

#[async_trait::async_trait]
impl Capability for Step {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        c: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        Ok(json!({"node": c.node_id}))
    }
}

/// A workflow of `steps` sequential no-op steps, `s0` … then complete.
pub(crate) fn steps_app(steps: usize) -> Application {
    let mut def = WorkflowDef::builder("steps", "1", "s0");
    for i in 0..steps {
        let next = if i + 1 == steps { "done".to_owned() } else { format!("s{}", i + 1) };
        def = def.node(
            &format!("s{i}"),
            Node::Capability {
                capability: "step".into(),
                inputs: vec![],
                idempotency_key: None,
                output: format!("s{i}"),
                next,
                on_failure: None,
                compensate: None,
            },
        );
    }
    let def = def.node("done", Node::Complete).build().unwrap_or_else(|e| panic!("{e}"));
    Application::builder("steps")
        .store("main")
        .workflow(def, "main")
        .capability("step", Step)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The run leases left, and the commands ever put on the queue (their dispatch rows).
pub(crate) async fn counts(env: &Env) -> (i64, i64) {
    let leases = env.count("main", "SELECT count(*) AS n FROM execution_leases").await;
    let sent = env.count("main", "SELECT count(*) AS n FROM jadpo_command_dispatch").await;
    (leases, sent)
}
