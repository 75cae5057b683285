//! Crashes on purpose, for the tests that kill the real process at a chosen step boundary. Only
//! with the `crash-points` feature, which no shipped build turns on (the test environment crate
//! does, so the binary `cargo test` builds has it).
//!
//! `JADPO_CRASH_AT=<point>[:<k>][,<point>[:<k>]…]` aborts the process the `k`-th time (from 0;
//! 0 when left out) the engine reaches the named fault point (`jadpo-engine`'s `fault!`, e.g.
//! `deliver.after_subscriber_commit`). An abort runs no destructor, flushes nothing and drains
//! nothing: what a power cut or the kernel's OOM killer leaves behind, at a known place (a test
//! tells it by the exit, `SIGABRT`). It says on standard error where it crashed, for the log.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The variable naming the points.
pub const VARIABLE: &str = "JADPO_CRASH_AT";

/// What standard error says right before the abort, followed by the point's name.
const SAYS: &str = "jadpo-local: crashing on purpose at ";

/// Arms the points `JADPO_CRASH_AT` names; nothing when it is unset.
pub fn arm_from_env() -> anyhow::Result<()> {
    let Some(spec) = std::env::var(VARIABLE).ok().filter(|s| !s.trim().is_empty()) else {
        return Ok(());
    };
    for (point, k) in parse(&spec)? {
        arm(point, k)?;
    }
    Ok(())
}

/// The points and arrivals of a `JADPO_CRASH_AT` value.
fn parse(spec: &str) -> anyhow::Result<Vec<(String, usize)>> {
    spec.split(',')
        .map(|entry| {
            let (point, k) = entry.trim().split_once(':').unwrap_or((entry.trim(), "0"));
            let k = k.parse::<usize>().map_err(|_| {
                anyhow::anyhow!("{VARIABLE}: {entry:?}: the arrival after ':' is not a number")
            })?;
            let named = !point.is_empty()
                && point.chars().all(|c| c.is_ascii_alphanumeric() || "._".contains(c));
            anyhow::ensure!(named, "{VARIABLE}: {entry:?} does not name a fault point");
            Ok((point.to_owned(), k))
        })
        .collect()
}

/// Aborts the process at the `k`-th arrival at `point`.
fn arm(point: String, k: usize) -> anyhow::Result<()> {
    let arrivals = AtomicUsize::new(0);
    let name = point.clone();
    fail::cfg_callback(point, move || {
        if arrivals.fetch_add(1, Ordering::SeqCst) == k {
            eprintln!("{SAYS}{name} (arrival {k})");
            std::process::abort();
        }
    })
    .map_err(|e| anyhow::anyhow!("{VARIABLE}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn points_and_arrivals_are_read_and_malformed_ones_refused() {
        let parsed = parse("deliver.after_outcome, steps.after_call:3").unwrap_or_default();
        let expected =
            [("deliver.after_outcome".to_owned(), 0), ("steps.after_call".to_owned(), 3)];
        assert_eq!(parsed, expected);
        for bad in ["steps.after_call:x", ":2", "a b", "x:-1", "x,"] {
            let error = parse(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(error.starts_with("JADPO_CRASH_AT: "), "{bad:?} was taken: {error:?}");
        }
    }
}
