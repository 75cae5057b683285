//! How often each fault point failed in this process (tests only: the `failpoints` feature).
//!
//! A crash loop arms points by name; a point renamed or moved off the path would leave the loop
//! green while testing nothing. Each point that fails its function (`return`) counts here, and
//! the loops compare the counts before and after to show that every point they armed fired.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

static FIRED: Mutex<BTreeMap<&'static str, usize>> = Mutex::new(BTreeMap::new());

/// Counts one failure at `point`.
pub fn record(point: &'static str) {
    *FIRED.lock().unwrap_or_else(PoisonError::into_inner).entry(point).or_default() += 1;
}

/// How many times `point` has failed in this process.
pub fn fired(point: &str) -> usize {
    FIRED.lock().unwrap_or_else(PoisonError::into_inner).get(point).copied().unwrap_or(0)
}

/// Every point's count, to diff against a later one.
pub fn snapshot() -> BTreeMap<&'static str, usize> {
    FIRED.lock().unwrap_or_else(PoisonError::into_inner).clone()
}
