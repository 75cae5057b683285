//! Bringing stored events to the complete form: `workflow_events.payload` holds the complete
//! serialized event, and rows written before that hold the inner payload alone. Readers take
//! both forms, so the rewrite is optional and online: it runs in pages of `(run_id, seq)` order,
//! one transaction each, and rewrites only rows still in the older form, so a run stopped
//! part-way (a crash, a Ctrl-C) resumes by being started again and a finished one is a no-op.

use jadpo_core::StoreError;

/// How far an upgrade got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upgraded {
    /// Pages committed.
    pub pages: u64,
    /// Rows rewritten into the complete form.
    pub rewritten: u64,
    /// The last position committed, `(run_id, seq)`.
    pub last: Option<(String, i64)>,
}

/// Rewrites every event of `store` still in the older form, `batch` rows per transaction,
/// calling `progress` after each page.
pub async fn upgrade_payloads(
    store: &dyn jadpo_core::ports::WorkflowOps,
    batch: u32,
    mut progress: impl FnMut(&Upgraded) + Send,
) -> Result<Upgraded, StoreError> {
    if batch == 0 {
        return Err(StoreError::invalid("the batch size must be at least 1"));
    }
    let mut done = Upgraded::default();
    let mut after = (String::new(), -1);
    while let Some((last, rewritten)) = store.events_upgrade_page(&after, batch).await? {
        done.pages += 1;
        done.rewritten += rewritten;
        done.last = Some(last.clone());
        progress(&done);
        crate::fault!("events.after_upgrade_page");
        after = last;
    }
    Ok(done)
}
