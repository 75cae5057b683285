//! Leases that last, on both adapters: an executor renews its run's lease while a capability
//! runs longer than the lease (and a competitor is kept out meanwhile); an executor killed
//! mid-capability leaves an expired lease that the next relay pass finds, clears and resumes
//! (another executor runs the command and the run finishes, long before the redelivery window);
//! a capability past its deadline is stopped and fails the command saying so; and a command run
//! behind another under the same lease that fails to start is queued at once. Then a crash
//! loop: hundreds of runs per adapter whose executor is killed mid-capability, the relay
//! sometimes crashing between clearing the expired lease and resending the command; every run
//! finishes with its result recorded once (printed: lost 0, repeated 0).
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jadpo_application::{Application, Capability, CapabilityContext, CommandRequest, HandlerError};
use jadpo_core::{Clock, ManualClock, Store};
use jadpo_engine::dispatch::dispatch;
use jadpo_engine::relay::relay;
use jadpo_engine::workflow::runs::{find_run, start_run};
use jadpo_engine::{EngineSettings, WorkflowSettings};
use jadpo_test_env::{Env, Kind};
use jadpo_workflow::def::{Node, WorkflowDef};
use jadpo_workflow::state::ExecutionStatus;
use serde_json::{Value, json};

const LEASE: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Runs twice as long as the lease, in the clock's time, and lets a competitor try the run.
    Long,
    /// Never finishes.
    Hang,
    /// Finishes at once.
    Quick,
}

#[derive(Default)]
struct Control {
    mode: Mutex<Option<Mode>>,
    clock: OnceLock<Arc<ManualClock>>,
    store: OnceLock<Arc<dyn Store>>,
    started: tokio::sync::Notify,
    calls: AtomicUsize,
    competitor_got_it: AtomicBool,
}

struct Slow(Arc<Control>);

impl Slow {
    async fn long(&self, run_id: &str) {
        let c = &self.0;
        let (Some(clock), Some(store)) = (c.clock.get(), c.store.get()) else { return };
        for step in 0..6 {
            tokio::time::sleep(LEASE / 3).await;
            clock.advance(chrono::Duration::milliseconds(100));
            if step == 3 {
                let now = clock.now().timestamp_millis();
                let taken = store.run_lease_take(run_id, "competitor", now, now + 300).await;
                if taken.ok().flatten().is_some() {
                    c.competitor_got_it.store(true, Ordering::SeqCst);
                }
            }
        }
    }
}

#[async_trait]
impl Capability for Slow {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        command: &CommandRequest,
    ) -> Result<Value, HandlerError> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        self.0.started.notify_one();
        let mode = self.0.mode.lock().ok().and_then(|m| *m);
        match mode {
            Some(Mode::Long) => self.long(&command.run_id).await,
            Some(Mode::Hang) => std::future::pending::<()>().await,
            _ => {}
        }
        Ok(json!({"done": true}))
    }
}

fn app(control: &Arc<Control>) -> Application {
    let def = WorkflowDef::builder("slow", "1", "work")
        .node(
            "work",
            Node::Capability {
                capability: "slow".into(),
                inputs: Vec::new(),
                idempotency_key: Some("{run_id}:{node}".into()),
                output: "work".into(),
                next: "done".into(),
                on_failure: None,
                compensate: None,
            },
        )
        .node("done", Node::Complete)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Application::builder("leases")
        .store("main")
        .workflow(def, "main")
        .capability("slow", Slow(Arc::clone(control)))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn env(kind: Kind, deadline: Duration, mode: Mode) -> (Env, Arc<Control>, String) {
    let control = Arc::new(Control::default());
    let workflows = WorkflowSettings { run_lease: LEASE, capability_deadline: deadline };
    let settings = EngineSettings { workflows, ..EngineSettings::default() };
    let env = Env::new(kind, app(&control), settings).await;
    let _ = control.clock.set(Arc::clone(&env.clock));
    let _ = control.store.set(Arc::clone(env.store("main")));
    if let Ok(mut m) = control.mode.lock() {
        *m = Some(mode);
    }
    let run = start_run(&env.engine, "slow", json!({}), None, None).await;
    let run = run.unwrap_or_else(|e| panic!("{e}")).run_id;
    (env, control, run)
}

async fn status(env: &Env, run: &str) -> ExecutionStatus {
    find_run(&env.engine, run).await.map(|(_, s)| s.status).unwrap_or_else(|e| panic!("{e}"))
}

async fn a_long_capability_keeps_its_lease(kind: Kind) {
    let (mut env, control, run) = env(kind, Duration::from_secs(30), Mode::Long).await;
    env.drain().await;
    assert!(!control.competitor_got_it.load(Ordering::SeqCst), "{kind:?}: the lease was taken");
    assert_eq!(status(&env, &run).await, ExecutionStatus::Completed, "{kind:?}: result refused");
    assert_eq!(control.calls.load(Ordering::SeqCst), 1);
}

async fn a_killed_holder_is_taken_over(kind: Kind) {
    let (mut env, control, run) = env(kind, Duration::from_secs(30), Mode::Hang).await;
    let message = env.rx.try_recv().unwrap_or_else(|e| panic!("no command was sent: {e}"));
    let holder = {
        let engine = env.engine.clone();
        tokio::spawn(async move { dispatch(&engine, &message.body).await })
    };
    control.started.notified().await;
    holder.abort(); // the executor dies mid-capability: nothing releases its lease
    let _ = holder.await;
    let leases = "SELECT count(*) AS n FROM execution_leases";
    assert_eq!(env.count("main", leases).await, 1, "{kind:?}: the holder's lease is there");
    // While the lease is live, the relay leaves the run alone.
    env.clock.advance(chrono::Duration::milliseconds(100));
    relay(&env.engine, Instant::now() + Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(env.rx.try_recv().is_err(), "{kind:?}: a live lease's run was resumed");
    // Past its expiry (far within the 15-minute redelivery window), the next pass resumes it.
    env.clock.advance(chrono::Duration::milliseconds(300));
    if let Ok(mut m) = control.mode.lock() {
        *m = Some(Mode::Quick);
    }
    relay(&env.engine, Instant::now() + Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    env.drain().await;
    assert_eq!(status(&env, &run).await, ExecutionStatus::Completed, "{kind:?}: not taken over");
    assert_eq!(control.calls.load(Ordering::SeqCst), 2, "{kind:?}");
    assert_eq!(env.count("main", leases).await, 0, "{kind:?}: a lease was left");
    let completed = "SELECT count(*) AS n FROM workflow_events WHERE type = 'command.completed'";
    assert_eq!(env.count("main", completed).await, 1, "{kind:?}: the result was recorded twice");
}

async fn a_capability_past_its_deadline_fails_saying_so(kind: Kind) {
    let (mut env, _control, run) = env(kind, Duration::from_millis(300), Mode::Hang).await;
    env.drain().await;
    let (_, state) = find_run(&env.engine, &run).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state.status, ExecutionStatus::Failed, "{kind:?}");
    let error = state.error.map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("did not finish within 0.3 s"), "{kind:?}: {error}");
}

fn set_mode(control: &Control, mode: Mode) {
    if let Ok(mut m) = control.mode.lock() {
        *m = Some(mode);
    }
}

/// Kills the executor of `run`'s pending command mid-capability.
async fn kill_holder(env: &mut Env, control: &Control) {
    set_mode(control, Mode::Hang);
    let message = env.rx.try_recv().unwrap_or_else(|e| panic!("no command was sent: {e}"));
    let engine = env.engine.clone();
    let holder = tokio::spawn(async move { dispatch(&engine, &message.body).await });
    control.started.notified().await;
    holder.abort();
    let _ = holder.await;
    set_mode(control, Mode::Quick);
}

async fn pass(env: &mut Env) {
    relay(&env.engine, Instant::now() + Duration::from_secs(5)).await.ok();
    env.drain().await;
}

const CRASH_RUNS: usize = 200;

/// Kills each run's executor, crashes the relay after clearing the lease in a random half of the
/// runs, and counts the runs that never finished (lost) or recorded their result twice
/// (repeated).
async fn killed_holders_lose_and_repeat_nothing(kind: Kind) -> (usize, usize) {
    let (mut env, control, first) = env(kind, Duration::from_secs(30), Mode::Quick).await;
    let (mut lost, mut repeated) = (0, 0);
    let crash_runs = jadpo_test_env::sized(CRASH_RUNS);
    let fired_before = jadpo_engine::fault_points::fired("relay.after_lease_cleared");
    for n in 0..crash_runs {
        let run = match n {
            0 => first.clone(),
            _ => {
                start_run(&env.engine, "slow", json!({}), None, None)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
                    .run_id
            }
        };
        kill_holder(&mut env, &control).await;
        // The first run crashes the relay, the others at random.
        let crash = n == 0 || fastrand::bool();
        if crash {
            fail::cfg("relay.after_lease_cleared", "1*return").unwrap_or_else(|e| panic!("{e}"));
        }
        env.clock.advance(chrono::Duration::milliseconds(400));
        pass(&mut env).await;
        fail::remove("relay.after_lease_cleared");
        if status(&env, &run).await != ExecutionStatus::Completed {
            // The lease was cleared but the command not resent: the lost-command sweep sends it.
            env.clock.advance(chrono::Duration::minutes(16));
            pass(&mut env).await;
        }
        let completed = jadpo_test_env::count_where(
            &env,
            "main",
            "SELECT count(*) AS n FROM workflow_events WHERE run_id = $1 AND type = 'command.completed'",
            &run,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        match (status(&env, &run).await, completed) {
            (ExecutionStatus::Completed, 1) => {}
            (_, 0) => lost += 1,
            _ => repeated += 1,
        }
    }
    println!(
        "{kind:?}: {crash_runs} runs, executor killed in each: lost {lost}, repeated {repeated}"
    );
    let fired = jadpo_engine::fault_points::fired("relay.after_lease_cleared") - fired_before;
    assert!(fired > 0, "{kind:?}: the fault at relay.after_lease_cleared never fired");
    (lost, repeated)
}

async fn a_step_that_cannot_run_behind_another_is_queued(kind: Kind) {
    // The second step's capability fails to start (a store error before it): its command is
    // queued at once for another try, not left to the relay.
    let mut env = Env::new(kind, crate::steps_app::steps_app(2), Default::default()).await;
    let state = start_run(&env.engine, "steps", json!({}), None, None).await;
    let run = state.unwrap_or_else(|e| panic!("{e}")).run_id;
    fail::cfg("command.before_capability", "1*off->1*return").unwrap_or_else(|e| panic!("{e}"));
    let first = env.drain().await;
    fail::remove("command.before_capability");
    assert_eq!(first.len(), 2, "{kind:?}: s1 queued after failing behind s0: {first:?}");
    assert!(first[0].is_err() && first[1].is_ok(), "{kind:?}: {first:?}");
    let state = find_run(&env.engine, &run).await.map(|(_, s)| s.status);
    assert_eq!(state.ok(), Some(ExecutionStatus::Completed), "{kind:?}");
    assert_eq!(crate::steps_app::counts(&env).await, (0, 2), "{kind:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_leases_last_and_stopped_holders_are_taken_over() {
    let _scenario = fail::FailScenario::setup();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        a_long_capability_keeps_its_lease(kind).await;
        a_killed_holder_is_taken_over(kind).await;
        a_capability_past_its_deadline_fails_saying_so(kind).await;
        a_step_that_cannot_run_behind_another_is_queued(kind).await;
        assert_eq!(killed_holders_lose_and_repeat_nothing(kind).await, (0, 0), "{kind:?}");
    }
}
