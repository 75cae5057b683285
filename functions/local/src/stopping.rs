//! How the local process stops: it stops taking requests, then drains the deliveries already
//! queued while the server still answers the sink that stands in for their services (else each
//! would fail as unreachable and open its breaker). The application's routes answer `503`
//! meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use jadpo_engine::Engine;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::loops::{Inbox, delivery_loop, housekeeping_loop, relay_loop, schedule_loop};

/// How often each background loop runs.
pub struct Intervals {
    pub relay: Duration,
    pub tick: Duration,
    pub housekeeping: Duration,
}

/// The background loops of one process, until [`Loops::drain`].
pub struct Loops {
    stop: watch::Sender<bool>,
    relay: JoinHandle<()>,
    ticks: JoinHandle<()>,
    housekeeping: JoinHandle<()>,
    delivery: JoinHandle<usize>,
    draining: Arc<AtomicBool>,
}

impl Loops {
    /// Starts the relay, schedule, housekeeping and delivery loops over `engine`.
    pub fn start(engine: &Engine, intervals: &Intervals, inbox: Inbox, workers: usize) -> Self {
        let (stop, stopped) = watch::channel(false);
        let relay = tokio::spawn(relay_loop(engine.clone(), intervals.relay, stopped.clone()));
        let ticks = tokio::spawn(schedule_loop(engine.clone(), intervals.tick, stopped.clone()));
        let housekeeping = tokio::spawn(housekeeping_loop(
            engine.clone(),
            intervals.housekeeping,
            stopped.clone(),
        ));
        let delivery = tokio::spawn(delivery_loop(engine.clone(), inbox, stopped, workers));
        Self { stop, relay, ticks, housekeeping, delivery, draining: Arc::default() }
    }

    /// `routes`, answering `503 Stopping` once the process has begun to stop.
    pub fn refusing_while_stopping(&self, routes: Router) -> Router {
        let refuse = Arc::clone(&self.draining);
        routes.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let stopping = refuse.load(Ordering::SeqCst);
                async move {
                    if stopping {
                        return jadpo_http::problem(
                            axum::http::StatusCode::SERVICE_UNAVAILABLE,
                            "Stopping",
                            "the local process is stopping: try again once it has restarted",
                        );
                    }
                    next.run(request).await
                }
            },
        ))
    }

    /// Refuses new requests, stops the loops and waits for the delivery workers to handle what
    /// is queued; how many deliveries they handled in all.
    pub async fn drain(self) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        let _ = self.stop.send(true);
        let _ = self.relay.await;
        let _ = self.ticks.await;
        let _ = self.housekeeping.await;
        self.delivery.await.unwrap_or(0)
    }
}
