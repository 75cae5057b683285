use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn capability(capability: &str, output: &str, next: &str, compensate: Option<&str>) -> Node {
    Node::Capability {
        capability: capability.to_owned(),
        inputs: vec![],
        idempotency_key: Some("{run_id}:{node}:{data.order}".to_owned()),
        output: output.to_owned(),
        next: next.to_owned(),
        on_failure: None,
        compensate: compensate.map(str::to_owned),
    }
}

/// reserve → charge → wait for shipment.confirmed → complete; reserve and charge compensate.
fn checkout() -> WorkflowDef {
    WorkflowDef::builder("checkout", "1", "reserve")
        .node("reserve", capability("reserve", "reservation", "charge", Some("release")))
        .node("charge", capability("charge", "payment", "ship", Some("refund")))
        .node(
            "ship",
            Node::Wait {
                event: "shipment.confirmed".into(),
                output: "shipment".into(),
                next: "done".into(),
            },
        )
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A loop of two notifications, then a branch on the last answer.
fn looping() -> WorkflowDef {
    WorkflowDef::builder("notify", "2", "rounds")
        .node("rounds", Node::Repeat { times: 2, body: "ping".into(), next: "decide".into() })
        .node("ping", capability("ping", "answer", "rounds", None))
        .node(
            "decide",
            Node::Branch {
                key: "answer".into(),
                equals: json!("yes"),
                then: "done".into(),
                otherwise: "wait".into(),
            },
        )
        .node(
            "wait",
            Node::Wait { event: "nudge".into(), output: "nudge".into(), next: "done".into() },
        )
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn step(
    def: &WorkflowDef,
    state: Option<&ExecutionState>,
    incoming: Incoming,
    events: &mut Vec<RuntimeEvent>,
) -> Transition {
    let t = decide(def, state, &incoming, "r1", 1_000 + events.len() as i64)
        .unwrap_or_else(|e| panic!("{e}"));
    events.extend(t.events.clone());
    t
}

fn completion(t: &Transition, result: Value) -> Incoming {
    let c = &t.commands[0];
    Incoming::CommandCompleted { command_id: c.id.clone(), node_id: c.node_id.clone(), result }
}

#[test]
fn checkout_runs_to_completion_with_revision_equal_to_the_last_event() {
    let def = checkout();
    let mut events = Vec::new();
    let t = step(&def, None, Incoming::Start { input: json!({"order_id": "o-1"}) }, &mut events);
    assert_eq!(t.state.status, ExecutionStatus::Running);
    assert_eq!(t.commands.len(), 1);
    assert_eq!(t.commands[0].command_type, "reserve");
    assert_eq!(t.commands[0].id, format!("r1:cmd:{}", t.commands[0].seq));
    assert_eq!(t.commands[0].idempotency_key.as_deref(), Some("r1:reserve:{data.order}"));
    let t = step(&def, Some(&t.state), completion(&t, json!({"hold": 1})), &mut events);
    assert_eq!(t.acks, vec![CommandAck { command_id: "r1:cmd:3".into(), status: "completed" }]);
    assert_eq!(t.commands[0].command_type, "charge");
    let t = step(&def, Some(&t.state), completion(&t, json!({"paid": true})), &mut events);
    assert_eq!(t.state.status, ExecutionStatus::Waiting);
    let bad = decide(
        &def,
        Some(&t.state),
        &Incoming::External { event_type: "other".into(), payload: json!({}) },
        "r1",
        9,
    );
    assert!(matches!(bad, Err(KernelError::Unexpected(_))));
    let t = step(
        &def,
        Some(&t.state),
        Incoming::External { event_type: "shipment.confirmed".into(), payload: json!({"n": 1}) },
        &mut events,
    );
    assert_eq!(t.state.status, ExecutionStatus::Completed);
    assert_eq!(t.state.revision, events.last().map_or(0, |e| e.seq));
    assert_eq!(t.state.data["payment"], json!({"paid": true}));
    assert_eq!(replay("r1", &events).as_ref(), Some(&t.state));
    let after = decide(&def, Some(&t.state), &Incoming::Cancel { reason: "late".into() }, "r1", 9);
    assert_eq!(after.err(), Some(KernelError::Terminal("completed")));
}

#[test]
fn cancelling_compensates_completed_steps_latest_first() {
    let def = checkout();
    let mut events = Vec::new();
    let t = step(&def, None, Incoming::Start { input: json!({}) }, &mut events);
    let t = step(&def, Some(&t.state), completion(&t, json!("r")), &mut events);
    let t = step(&def, Some(&t.state), completion(&t, json!("p")), &mut events);
    let t = step(&def, Some(&t.state), Incoming::Cancel { reason: "customer".into() }, &mut events);
    assert_eq!(t.state.status, ExecutionStatus::Cancelling);
    assert_eq!(t.commands[0].command_type, "refund", "the latest step is compensated first");
    let t = step(&def, Some(&t.state), completion(&t, json!("refunded")), &mut events);
    assert_eq!(t.commands[0].command_type, "release");
    let t = step(&def, Some(&t.state), completion(&t, json!("released")), &mut events);
    assert_eq!(t.state.status, ExecutionStatus::Cancelled);
    assert_eq!(replay("r1", &events).as_ref(), Some(&t.state));
}

#[test]
fn a_step_in_flight_at_cancel_is_compensated_once_it_completes() {
    let def = checkout();
    let mut events = Vec::new();
    let t = step(&def, None, Incoming::Start { input: json!({}) }, &mut events);
    let reserve = t.clone();
    let t = step(&def, Some(&t.state), Incoming::Cancel { reason: "x".into() }, &mut events);
    assert!(t.commands.is_empty(), "waits for the step in flight");
    let t = step(&def, Some(&t.state), completion(&reserve, json!("r")), &mut events);
    assert_eq!(t.commands[0].command_type, "release");
    let failed = Incoming::CommandFailed {
        command_id: t.commands[0].id.clone(),
        node_id: "reserve".into(),
        error: "503".into(),
    };
    let t = step(&def, Some(&t.state), failed, &mut events);
    assert_eq!(t.state.status, ExecutionStatus::CancellationFailed);
    assert_eq!(replay("r1", &events).as_ref(), Some(&t.state));
}

#[test]
fn loops_and_branches_keep_their_counters() {
    let def = looping();
    let mut events = Vec::new();
    let mut t = step(&def, None, Incoming::Start { input: json!({}) }, &mut events);
    assert_eq!(t.state.loop_state.as_ref().and_then(|l| l.get("rounds")), Some(&json!(1)));
    t = step(&def, Some(&t.state), completion(&t, json!("no")), &mut events);
    assert_eq!(t.state.loop_state.as_ref().and_then(|l| l.get("rounds")), Some(&json!(2)));
    t = step(&def, Some(&t.state), completion(&t, json!("no")), &mut events);
    assert_eq!(t.state.status, ExecutionStatus::Waiting, "the branch took the wait");
    assert_eq!(t.state.loop_state.as_ref().map(|l| l.is_empty()), Some(true));
    assert_eq!(replay("r1", &events).as_ref(), Some(&t.state));
}

#[test]
fn bad_definitions_are_refused() {
    let err = WorkflowDef::builder("w", "1", "a")
        .node("a", capability("x", "o", "nowhere", None))
        .build();
    assert!(matches!(err, Err(DefinitionError::UnknownNode { .. })));
    assert!(matches!(
        WorkflowDef::builder("w", "1", "a").build(),
        Err(DefinitionError::NoStart(_))
    ));
    let open = WorkflowDef::builder("w", "1", "r")
        .node("r", Node::Repeat { times: 2, body: "b".into(), next: "d".into() })
        .node("b", Node::Complete)
        .node("d", Node::Complete)
        .build();
    assert!(matches!(open, Err(DefinitionError::OpenLoop { .. })));
}

/// A name longer than the column it is written to is refused at declaration, on every adapter
/// alike; one at the width is taken.
#[test]
fn names_wider_than_their_columns_are_refused() {
    let long_node = "n".repeat(256);
    let wide = |start: &str, node: Node| WorkflowDef::builder("w", "1", start).node(start, node);
    let refused = wide(&long_node, Node::Complete).build();
    assert!(
        matches!(
            &refused,
            Err(DefinitionError::TooLong { what: "node id", len: 256, max: 255, .. })
        ),
        "{refused:?}"
    );
    let cap = capability(&"c".repeat(101), "o", "d", None);
    let refused = wide("a", cap).node("d", Node::Complete).build();
    assert!(matches!(&refused, Err(DefinitionError::TooLong { what: "capability", .. })));
    let wait = Node::Wait { event: "e".repeat(101), output: "o".into(), next: "d".into() };
    let refused = wide("a", wait).node("d", Node::Complete).build();
    assert!(matches!(&refused, Err(DefinitionError::TooLong { what: "event type", .. })));
    let at_width = wide(&"n".repeat(255), Node::Complete).build();
    assert!(at_width.is_ok(), "{at_width:?}");
}

/// Every valid incoming event the run could receive now.
fn choices(def: &WorkflowDef, state: &ExecutionState, pending: &[NewCommand]) -> Vec<Incoming> {
    let mut out = vec![Incoming::Cancel { reason: "any".into() }];
    if state.status == ExecutionStatus::Cancelling {
        out.clear();
    }
    for c in pending {
        out.push(Incoming::CommandCompleted {
            command_id: c.id.clone(),
            node_id: c.node_id.clone(),
            result: json!("yes"),
        });
        out.push(Incoming::CommandCompleted {
            command_id: c.id.clone(),
            node_id: c.node_id.clone(),
            result: json!("no"),
        });
        out.push(Incoming::CommandFailed {
            command_id: c.id.clone(),
            node_id: c.node_id.clone(),
            error: "boom".into(),
        });
    }
    if state.status == ExecutionStatus::Waiting {
        if let Some(Node::Wait { event, .. }) =
            state.current_node_id.as_deref().and_then(|n| def.node(n))
        {
            out.push(Incoming::External {
                event_type: event.clone(),
                payload: json!({"ok": true}),
            });
        }
    }
    out
}

proptest! {
    #[test]
    fn random_valid_histories_replay_to_the_materialized_state(picks in proptest::collection::vec(0_usize..16, 1..40), which in 0_usize..2) {
        let def = if which == 0 { checkout() } else { looping() };
        let mut events: Vec<RuntimeEvent> = Vec::new();
        let mut t = step(&def, None, Incoming::Start { input: json!({"order_id": "o"}) }, &mut events);
        let mut pending = t.commands.clone();
        for pick in picks {
            if t.state.status.is_terminal() {
                break;
            }
            let options = choices(&def, &t.state, &pending);
            if options.is_empty() {
                break;
            }
            let incoming = options[pick % options.len()].clone();
            let next = decide(&def, Some(&t.state), &incoming, "r1", 5_000 + events.len() as i64);
            let Ok(next) = next else { continue };
            prop_assert_eq!(next.events.first().map(|e| e.seq), Some(t.state.revision + 1));
            events.extend(next.events.clone());
            pending.retain(|c| !next.acks.iter().any(|a| a.command_id == c.id));
            pending.extend(next.commands.clone());
            t = next;
            let replayed = replay("r1", &events);
            prop_assert_eq!(replayed.as_ref(), Some(&t.state));
            prop_assert_eq!(t.state.revision, events.len() as u64);
        }
    }
}

#[test]
fn a_stored_event_is_read_back_in_either_form() {
    let event = RuntimeEvent {
        seq: 3,
        event_type: "command.completed".into(),
        payload: json!({"output": "payment", "result": {"id": "ch_1"}}),
        timestamp: 1_700,
    };
    let whole = event.stored();
    assert_eq!(whole["payload"], event.payload);
    assert_eq!(
        (whole["seq"].clone(), whole["type"].clone()),
        (json!(3), json!("command.completed"))
    );
    let read = RuntimeEvent::from_stored(3, "command.completed", whole.clone(), 1_700);
    assert_eq!(read, event);
    assert!(event.is_stored_whole(&whole));
    // A row written before the complete form holds the inner payload alone.
    let legacy = RuntimeEvent::from_stored(3, "command.completed", event.payload.clone(), 1_700);
    assert_eq!(legacy, event);
    assert!(!event.is_stored_whole(&event.payload));
    // An inner payload that happens to carry a `payload` key is not mistaken for the whole form.
    let lookalike = json!({"payload": 1, "seq": 9, "type": "other"});
    let read = RuntimeEvent::from_stored(3, "command.completed", lookalike.clone(), 1_700);
    assert_eq!(read.payload, lookalike);
}

/// A resolved idempotency key longer than its column is never issued: the run fails at the node,
/// saying why, on every adapter alike (PostgreSQL's column refused it, and the command that led
/// there was re-run forever). A key of exactly the width is issued.
#[test]
fn a_resolved_key_over_its_width_fails_the_run_at_its_node() {
    let def = WorkflowDef::builder("keys", "1", "reserve")
        .node("reserve", capability("reserve", "order", "charge", None))
        .node("charge", capability("charge", "payment", "done", None))
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // "r1:charge:" is 10 characters.
    for (len, fits) in [(245, true), (246, false)] {
        let mut events = Vec::new();
        let t = step(&def, None, Incoming::Start { input: json!({}) }, &mut events);
        let order = "o".repeat(len);
        let t = step(&def, Some(&t.state), completion(&t, json!(order)), &mut events);
        if fits {
            assert_eq!(t.state.status, ExecutionStatus::Running);
            let key = t.commands[0].idempotency_key.as_deref().unwrap_or_default();
            assert_eq!(key.chars().count(), 255);
        } else {
            assert_eq!(t.state.status, ExecutionStatus::Failed, "{:?}", t.events);
            assert!(t.commands.is_empty(), "issued: {:?}", t.commands);
            let last = t.events.last().map(|e| e.payload.clone()).unwrap_or_default();
            let message = last["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("256 characters") && message.contains("at most 255"),
                "{last}"
            );
            assert_eq!(last["error"]["node"], "charge");
        }
    }
}
