//! Stopping cleanly on request. A process that runs until it is stopped — the local process, and
//! any long-running verb — listens for Ctrl-C (`SIGINT`) and `SIGTERM` (what `kill`, `docker
//! stop` and systemd send) from its first moment, and then drains and closes its stores itself.
//! Killed by the default action instead, SQLite would be left with its recent writes only in the
//! `-wal` file beside a stale main file, which a copy of the main file alone (a naive backup or
//! restore) loses.

/// The stop signals, listened for from the moment it is made (a signal that arrives before
/// [`wait`](Self::wait) is polled is kept, not fatal).
pub struct StopSignal {
    #[cfg(unix)]
    signals: (tokio::signal::unix::Signal, tokio::signal::unix::Signal),
}

impl StopSignal {
    /// Starts listening for `SIGINT` and `SIGTERM` (on Unix; elsewhere Ctrl-C when waited for).
    /// Needs a Tokio runtime.
    pub fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                signals: (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?),
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// The stop signal, if one came (without waiting: for a loop that stops between items). The
    /// yield first lets the runtime take in a signal that came meanwhile.
    pub async fn requested(&mut self) -> Option<&'static str> {
        tokio::task::yield_now().await;
        #[cfg(unix)]
        {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let (interrupt, terminate) = &mut self.signals;
            if interrupt.poll_recv(&mut cx).is_ready() {
                return Some("SIGINT");
            }
            if terminate.poll_recv(&mut cx).is_ready() {
                return Some("SIGTERM");
            }
        }
        None
    }

    /// Waits until the process is asked to stop; the signal's name (`SIGINT`, `SIGTERM`).
    pub async fn wait(self) -> &'static str {
        #[cfg(unix)]
        {
            let (mut interrupt, mut terminate) = self.signals;
            tokio::select! {
                _ = interrupt.recv() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
