//! How long a crash loop runs: a short count in the default suite, the long one under
//! `make soak`.
//!
//! The default suite (`make test`, CI) still arms every fault point alone on both adapters; the
//! random sets, which find the rarer combinations, run in thousands only under `make soak`, in
//! its own time.

/// Whether this is `make soak`'s run (`JADPO_SOAK` set, not `0`): the crash loops then run their
/// long counts.
pub fn soak() -> bool {
    std::env::var("JADPO_SOAK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// A crash loop's count: `soak_count` under `make soak`, else a tenth of it (at least 4), so that
/// the default suite stays within CI's time while `make soak` runs the thousands.
pub fn sized(soak_count: usize) -> usize {
    if soak() { soak_count } else { (soak_count / 10).max(4) }
}

#[cfg(test)]
mod tests {
    use super::sized;

    #[test]
    fn the_default_suite_runs_a_tenth_and_at_least_four() {
        // The test binary is never run under JADPO_SOAK by `make test`; `make soak` runs it too.
        if super::soak() {
            assert_eq!(sized(300), 300);
        } else {
            assert_eq!((sized(1000), sized(300), sized(30), sized(0)), (100, 30, 4, 4));
        }
    }
}
