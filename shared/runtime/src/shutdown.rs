//! Stopping cleanly on request. A process that runs until it is stopped — the local process, and
//! any long-running verb — waits here for Ctrl-C (`SIGINT`) or `SIGTERM`, which `kill`, `docker
//! stop` and systemd send, and then drains and closes its stores itself. Killed by the default
//! `SIGTERM` action instead, SQLite would be left with its recent writes only in the `-wal` file
//! beside a stale main file, which a copy of the main file alone (a naive backup or restore) loses.

/// Waits until the process is asked to stop; the signal's name (`SIGINT`, `SIGTERM`).
pub async fn stop_requested() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops cleanly");
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}
