//! The local process's delivery workers, on both adapters: several workers run deliveries side
//! by side (two deliveries that each wait for the other both finish), one worker runs them one
//! at a time (the same two time out), stopping drains what is queued, a worker taking
//! several messages at once delivers every one of them, and a worker finding less than a batch
//! while half the pool is busy waits (up to its linger) for more, but never while most workers
//! are idle.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use jadpo_application::{
    Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
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
    let inbox = Inbox { rx, backlog: None, batch: 1, linger: Duration::ZERO };
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
    let inbox = Inbox { rx, backlog: None, batch: 4, linger: Duration::ZERO };
    assert_eq!(delivery_loop(env.engine.clone(), inbox, stopped, 1).await, 10, "{kind:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 10, "{kind:?}: each ran once");
    let handled = "SELECT count(*) AS n FROM jadpo_deliveries WHERE status = 'handled'";
    assert_eq!(env.count("main", handled).await, 10, "{kind:?}");
}

async fn workers_run_deliveries_side_by_side(kind: Kind) {
    assert_eq!(handled_together(kind, 2).await, 2, "{kind:?}: two workers");
    assert_eq!(handled_together(kind, 1).await, 0, "{kind:?}: one worker runs one at a time");
}

/// Holds its delivery until released, with no transaction open (its subscriber declares a
/// connection, so it runs alone and opens its transaction after the handler): the worker
/// running it is busy, and SQLite's one writer is free.
struct Hold {
    blocked: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl Subscriber for Hold {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        self.blocked.notify_one();
        self.release.notified().await;
        Ok(())
    }
}

/// Reports each delivery's id.
struct Report(tokio::sync::mpsc::UnboundedSender<String>);

#[async_trait]
impl Subscriber for Report {
    async fn handle(&self, _: &mut HandlerContext<'_>, event: &Event) -> Result<(), HandlerError> {
        let _ = self.0.send(event.payload["id"].as_str().unwrap_or_default().to_owned());
        Ok(())
    }
}

/// `workers` workers taking up to four messages, waiting up to ten seconds to fill a batch, over
/// [`Hold`] (event `hold`) and [`Report`] (event `ping`): the env, the hold's handles, what is
/// reported, and the running workers.
struct Gated {
    env: Env,
    blocked: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
    ran: tokio::sync::mpsc::UnboundedReceiver<String>,
    stop: watch::Sender<bool>,
    workers: tokio::task::JoinHandle<usize>,
}

const LONG_LINGER: Duration = Duration::from_secs(10);

async fn gated(kind: Kind, workers: usize) -> Gated {
    let (blocked, release) =
        (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
    let (tx, ran) = tokio::sync::mpsc::unbounded_channel();
    let hold = Hold { blocked: Arc::clone(&blocked), release: Arc::clone(&release) };
    let app = Application::builder("t")
        .store("main")
        .event("ping")
        .event("hold")
        .action("ping", "main", Emit("ping"))
        .action("hold", "main", Emit("hold"))
        .connection("provider")
        .subscriber("report", "ping", "main", RetryPolicy::default(), Report(tx))
        .subscriber_via("hold", "hold", "main", RetryPolicy::default(), "provider", hold)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut env = Env::new(kind, app, EngineSettings::default()).await;
    let (_, rx) = tokio::sync::mpsc::unbounded_channel();
    let rx = std::mem::replace(&mut env.rx, rx);
    let (stop, stopped) = watch::channel(false);
    let inbox = Inbox { rx, backlog: None, batch: 4, linger: LONG_LINGER };
    let workers = tokio::spawn(delivery_loop(env.engine.clone(), inbox, stopped, workers));
    Gated { env, blocked, release, ran, stop, workers }
}

impl Gated {
    async fn ping(&self, id: &str) {
        commit_and_enqueue(&self.env, request("ping", json!({"id": id}))).await;
    }

    /// The next id reported within `wait`, if any.
    async fn next(&mut self, wait: Duration) -> Option<String> {
        tokio::time::timeout(wait, self.ran.recv()).await.ok().flatten()
    }

    async fn finish(self) -> usize {
        self.release.notify_one();
        let _ = self.stop.send(true);
        self.workers.await.unwrap_or_else(|e| panic!("{e}"))
    }
}

/// While one worker is busy, a lone message waits for a batch to fill (well within the linger,
/// as it fills), and the batch is then delivered in full.
async fn a_busy_pool_fills_its_batches(kind: Kind) {
    let mut g = gated(kind, 2).await;
    commit_and_enqueue(&g.env, request("hold", json!({}))).await;
    tokio::time::timeout(Duration::from_secs(5), g.blocked.notified())
        .await
        .unwrap_or_else(|_| panic!("{kind:?}: the held delivery never started"));
    g.ping("a").await;
    assert_eq!(g.next(Duration::from_millis(300)).await, None, "{kind:?}: waits to fill");
    for id in ["b", "c", "d"] {
        g.ping(id).await;
    }
    let mut ran = Vec::new();
    for _ in 0..4 {
        // Well within the ten-second linger: a full batch goes at once.
        ran.extend(g.next(Duration::from_secs(5)).await);
    }
    ran.sort();
    assert_eq!(ran, ["a", "b", "c", "d"], "{kind:?}: the batch, delivered");
    assert_eq!(g.finish().await, 5, "{kind:?}");
}

/// With every worker idle, a message is delivered at once, not after the linger.
async fn an_idle_pool_does_not_wait(kind: Kind) {
    let mut g = gated(kind, 2).await;
    g.ping("alone").await;
    let ran = g.next(LONG_LINGER / 2).await;
    assert_eq!(ran.as_deref(), Some("alone"), "{kind:?}: delivered without lingering");
    assert_eq!(g.finish().await, 1, "{kind:?}");
}

/// With one of four workers busy (less than half the pool), a message is delivered at once.
async fn a_mostly_idle_pool_does_not_wait(kind: Kind) {
    let mut g = gated(kind, 4).await;
    commit_and_enqueue(&g.env, request("hold", json!({}))).await;
    tokio::time::timeout(Duration::from_secs(5), g.blocked.notified())
        .await
        .unwrap_or_else(|_| panic!("{kind:?}: the held delivery never started"));
    g.ping("a").await;
    let ran = g.next(LONG_LINGER / 2).await;
    assert_eq!(
        ran.as_deref(),
        Some("a"),
        "{kind:?}: one busy of four: delivered without lingering"
    );
    assert_eq!(g.finish().await, 2, "{kind:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_workers_linger_only_while_busy() {
    an_idle_pool_does_not_wait(Kind::Sqlite).await;
    a_mostly_idle_pool_does_not_wait(Kind::Sqlite).await;
    a_busy_pool_fills_its_batches(Kind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_workers_linger_only_while_busy() {
    an_idle_pool_does_not_wait(Kind::Postgres).await;
    a_mostly_idle_pool_does_not_wait(Kind::Postgres).await;
    a_busy_pool_fills_its_batches(Kind::Postgres).await;
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
