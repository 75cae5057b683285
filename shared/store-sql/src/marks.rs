//! The "sent" marks of deliveries put on the queue right after their commit, written together.
//!
//! Each commit that sends its deliveries then marks them sent, so that the relay's sweep leaves
//! them alone: a statement of its own after every commit, which under load cost the commit path
//! a sixth of its round trips. The mark is advice (a lost one only has the relay send the
//! message again, which delivery dedupes), so marks made at once can share one statement: as in
//! a group commit, a caller adds its ids to the open batch and waits for the flush that covers
//! them; whoever finds no flush running writes the whole batch. A caller waits at most for the
//! flush under way and its own, and when nothing else is marking it writes alone, at once.

use std::future::Future;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use jadpo_core::error::StoreError;

/// The batch being filled and how far the flushes have come.
#[derive(Default)]
struct Open {
    ids: Vec<String>,
    /// The latest `now` among the batch's callers.
    at: Option<DateTime<Utc>>,
    /// The number of the batch being filled; flushed batches are numbered below it.
    number: u64,
}

/// Marks waiting to be written, and the one flush at a time.
#[derive(Default)]
pub(crate) struct MarkBatches {
    open: Mutex<Open>,
    /// Held while a batch is written; holds the number of the last batch written.
    flushed: tokio::sync::Mutex<Option<u64>>,
}

impl MarkBatches {
    /// Adds `ids` (marked as of `now`) to the open batch and returns once a flush has written
    /// them, writing them itself (with every other id waiting) when no flush covers them yet.
    /// An error is the failed flush's, reported to the caller that ran it.
    pub(crate) async fn mark<F, Fut>(
        &self,
        ids: &[String],
        now: DateTime<Utc>,
        flush: F,
    ) -> Result<(), StoreError>
    where
        F: FnOnce(Vec<String>, DateTime<Utc>) -> Fut,
        Fut: Future<Output = Result<u64, StoreError>>,
    {
        let mine = {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            open.ids.extend_from_slice(ids);
            open.at = Some(open.at.map_or(now, |at| at.max(now)));
            open.number
        };
        let mut flushed = self.flushed.lock().await;
        if flushed.is_some_and(|last| last >= mine) {
            return Ok(()); // the flush this caller waited for wrote its ids
        }
        let (batch, at) = {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            let batch = std::mem::take(&mut open.ids);
            let at = open.at.take().unwrap_or(now);
            *flushed = Some(open.number);
            open.number += 1;
            (batch, at)
        };
        flush(batch, at).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// Twenty callers marking at once while each write takes a while: every id written once,
    /// in far fewer writes than callers; a lone caller writes its own at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn marks_made_at_once_share_a_write_and_none_is_lost() {
        let batches = Arc::new(MarkBatches::default());
        let written: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let callers: Vec<_> = (0..20)
            .map(|i| {
                let (batches, written) = (Arc::clone(&batches), Arc::clone(&written));
                tokio::spawn(async move {
                    let ids = [format!("d{i}")];
                    let flush = |batch: Vec<String>, _| async move {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let n = batch.len() as u64;
                        written.lock().unwrap_or_else(|p| p.into_inner()).push(batch);
                        Ok(n)
                    };
                    batches.mark(&ids, Utc::now(), flush).await
                })
            })
            .collect();
        for caller in callers {
            let marked = caller.await.unwrap_or_else(|e| panic!("{e}"));
            assert!(marked.is_ok(), "{marked:?}");
        }
        let written = written.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut ids: Vec<String> = written.iter().flatten().cloned().collect();
        ids.sort();
        let mut expected: Vec<String> = (0..20).map(|i| format!("d{i}")).collect();
        expected.sort();
        assert_eq!(ids, expected, "every id written once");
        assert!(written.len() <= 3, "{} writes for 20 callers at once", written.len());
        // Alone: written by its own caller, before it returns.
        let alone: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = Arc::clone(&alone);
        let flush = |batch: Vec<String>, _| async move {
            sink.lock().unwrap_or_else(|p| p.into_inner()).extend(batch);
            Ok(1)
        };
        let marked = batches.mark(&["lone".to_owned()], Utc::now(), flush).await;
        assert!(marked.is_ok(), "{marked:?}");
        assert_eq!(*alone.lock().unwrap_or_else(|p| p.into_inner()), ["lone"]);
    }

    /// A failed write is reported to the caller that ran it; the next mark writes again.
    #[tokio::test]
    async fn a_failed_write_is_reported_and_the_next_mark_writes() {
        let batches = MarkBatches::default();
        let failing = |_: Vec<String>, _| async { Err(StoreError::unavailable("down")) };
        let failed = batches.mark(&["a".to_owned()], Utc::now(), failing).await;
        assert!(failed.is_err(), "a failed write answered Ok");
        let seen: Mutex<Vec<String>> = Mutex::default();
        let flush = |batch: Vec<String>, _| {
            seen.lock().unwrap_or_else(|p| p.into_inner()).extend(batch);
            async { Ok(1) }
        };
        let marked = batches.mark(&["b".to_owned()], Utc::now(), flush).await;
        assert!(marked.is_ok(), "{marked:?}");
        assert_eq!(*seen.lock().unwrap_or_else(|p| p.into_inner()), ["b"], "only the new mark");
    }
}
