//! The `checkout` workflow: reserve → charge (through the `payments` connection) → wait for
//! `shipment.confirmed` → complete; cancelling releases the reservation and refunds the charge.

use async_trait::async_trait;
use jadpo_application::{Capability, CapabilityContext, CommandRequest, HandlerError};
use jadpo_workflow::def::{DefinitionError, Node, WorkflowDef};
use serde_json::{Value, json};

fn step(capability: &str, output: &str, next: &str, compensate: &str) -> Node {
    Node::Capability {
        capability: capability.to_owned(),
        inputs: Vec::new(),
        idempotency_key: Some("{run_id}:{node}".to_owned()),
        output: output.to_owned(),
        next: next.to_owned(),
        on_failure: None,
        compensate: Some(compensate.to_owned()),
    }
}

/// The graph (input: `{"order_id": "..."}`).
pub fn checkout() -> Result<WorkflowDef, DefinitionError> {
    WorkflowDef::builder("checkout", "1", "reserve")
        .node("reserve", step("reserve", "reservation", "charge", "release"))
        .node("charge", step("charge", "payment", "ship", "refund"))
        .node(
            "ship",
            Node::Wait {
                event: "shipment.confirmed".to_owned(),
                output: "shipment".to_owned(),
                next: "done".to_owned(),
            },
        )
        .node("done", Node::Complete)
        .build()
}

fn order_id(command: &CommandRequest) -> Result<String, HandlerError> {
    command.payload["input"]["order_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| HandlerError::rejected(422, "Bad input", "checkout needs an order_id"))
}

/// `reserve`: holds the order's stock (recorded in the run's data).
#[derive(Debug, Clone, Copy)]
pub struct Reserve;

#[async_trait]
impl Capability for Reserve {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        Ok(json!({"order_id": order_id(command)?, "hold": command.idempotency_key}))
    }
}

/// `release`: undoes `reserve`.
#[derive(Debug, Clone, Copy)]
pub struct Release;

#[async_trait]
impl Capability for Release {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        Ok(json!({"released": order_id(command)?}))
    }
}

/// `charge`: charges the order through the `payments` connection, keyed by the command's
/// idempotency key so a retried command is not charged twice.
#[derive(Debug, Clone, Copy)]
pub struct Charge;

#[async_trait]
impl Capability for Charge {
    async fn run(
        &self,
        ctx: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        ctx.call("payments", "", json!({"kind": "charge", "order_id": order_id(command)?})).await?;
        Ok(json!({"charged": true}))
    }
}

/// `refund`: undoes `charge` through the same connection.
#[derive(Debug, Clone, Copy)]
pub struct Refund;

#[async_trait]
impl Capability for Refund {
    async fn run(
        &self,
        ctx: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        ctx.call("payments", "", json!({"kind": "refund", "order_id": order_id(command)?})).await?;
        Ok(json!({"refunded": true}))
    }
}
