//! The local process's delivery workers, on both adapters: several workers run deliveries side
//! by side (two deliveries that each wait for the other both finish), one worker runs them one
//! at a time (the same two time out), stopping drains what is queued, and a worker taking
//! several messages at once delivers every one of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use jadpo_core::app::{Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber};
use jadpo_engine::EngineSettings;
use jadpo_local::loops::{Inbox, delivery_loop};
use jadpo_test_env::{Emit, Env, Kind, commit_and_enqueue, request};
use serde_json::json;
use tokio::sync::watch;

/// Succeeds only if, within a second, another delivery of it is running at the same time.
struct Together(Arc<AtomicUsize>);

#[async_trait]
impl Subscriber for Together {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        let mut met = false;
        while !met && tokio::time::Instant::now() < deadline {
            met = self.0.load(Ordering::SeqCst) >= 2;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Stay counted a moment, so the other sees this one too.
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.0.fetch_sub(1, Ordering::SeqCst);
        if met { Ok(()) } else { Err(HandlerError::Failed("ran alone".to_owned())) }
    }
}

/// Two pings delivered by `workers` workers: how many deliveries ended handled.
async fn handled_together(kind: Kind, workers: usize) -> i64 {
    let app = Application::builder("t")
        .store("main")
        .event("ping")
        .action("ping", "main", Emit("ping"))
        .subscriber("together", "ping", "main", RetryPolicy::default(), Together(Arc::default()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut env = Env::new(kind, app, EngineSettings::default()).await;
    commit_and_enqueue(&env, request("ping", json!({}))).await;
    commit_and_enqueue(&env, request("ping", json!({}))).await;
    let (_, rx) = tokio::sync::mpsc::unbounded_channel();
    let rx = std::mem::replace(&mut env.rx, rx);
    let (stop, stopped) = watch::channel(false);
    // Stopped at once: the workers drain the two queued messages and return.
    let _ = stop.send(true);
    let inbox = Inbox { rx, backlog: None, batch: 1 };
    let drained = delivery_loop(env.engine.clone(), inbox, stopped, workers).await;
    assert_eq!(drained, 2, "{kind:?}, {workers} workers: both messages taken");
    env.count("main", "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'handled'").await
}

/// Counts its deliveries.
struct Count(Arc<AtomicUsize>);

#[async_trait]
impl Subscriber for Count {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Ten pings drained by one worker taking up to four at a time.
async fn batches_deliver_every_message(kind: Kind) {
    let ran = Arc::new(AtomicUsize::new(0));
    let app = Application::builder("t")
        .store("main")
        .event("ping")
        .action("ping", "main", Emit("ping"))
        .subscriber("count", "ping", "main", RetryPolicy::default(), Count(Arc::clone(&ran)))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut env = Env::new(kind, app, EngineSettings::default()).await;
    for _ in 0..10 {
        commit_and_enqueue(&env, request("ping", json!({}))).await;
    }
    let (_, rx) = tokio::sync::mpsc::unbounded_channel();
    let rx = std::mem::replace(&mut env.rx, rx);
    let (stop, stopped) = watch::channel(false);
    let _ = stop.send(true);
    let inbox = Inbox { rx, backlog: None, batch: 4 };
    assert_eq!(delivery_loop(env.engine.clone(), inbox, stopped, 1).await, 10, "{kind:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 10, "{kind:?}: each ran once");
    let handled = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'handled'";
    assert_eq!(env.count("main", handled).await, 10, "{kind:?}");
}

async fn workers_run_deliveries_side_by_side(kind: Kind) {
    assert_eq!(handled_together(kind, 2).await, 2, "{kind:?}: two workers");
    assert_eq!(handled_together(kind, 1).await, 0, "{kind:?}: one worker runs one at a time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_workers_run_deliveries_side_by_side() {
    workers_run_deliveries_side_by_side(Kind::Sqlite).await;
    batches_deliver_every_message(Kind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_workers_run_deliveries_side_by_side() {
    workers_run_deliveries_side_by_side(Kind::Postgres).await;
    batches_deliver_every_message(Kind::Postgres).await;
}
