//! Housekeeping's file steps: deleting the bytes of stored files no field holds, and of uploads
//! no row names, without ever deleting bytes a committed row names.
//!
//! Why in this order, each a batch under the lease: a file is first *claimed* in a transaction
//! (`jadpo_files.state` becomes `deleting`, which the count triggers refuse to reference from
//! then on), and only after that commits are its bytes deleted and its row made a tombstone. A
//! pass killed between the two leaves claimed files, which the next pass finishes first. Stored
//! bytes no row names are claimed the same way (a `deleting` row written for them), so an upload
//! registering late finds it claimed instead of racing the delete.

use std::time::Duration;

use chrono::{DateTime, Utc};
use jadpo_core::model::file::File;
use jadpo_core::ports::{BlobError, Blobs};
use jadpo_core::transaction::TransactionalStore;
use jadpo_core::{Store, StoreError, Transaction};

/// What the file steps need besides the store being kept: where the bytes are, and every store
/// holding `jadpo_files` (an upload is registered in its field's store, so stored bytes are an
/// orphan only if no store names them).
#[derive(Clone, Copy)]
pub(super) struct FileWork<'a> {
    /// The blob storage.
    pub(super) blobs: &'a dyn Blobs,
    /// Every store holding `jadpo_files`, the one being kept included.
    pub(super) stores: &'a [&'a dyn Store],
}

/// One batch's file work inside the batch's transaction.
#[derive(Debug, Clone, Copy)]
pub(super) enum FileStep {
    /// Files claimed earlier whose bytes may still be stored.
    Deleting,
    /// Files held by no field, noted as seen so now.
    Unheld,
    /// Files unheld since before the cutoff, claimed.
    Claim(DateTime<Utc>),
    /// Stored bytes written before the cutoff that no store names, claimed.
    Orphans(DateTime<Utc>),
    /// Tombstones older than the cutoff, dropped.
    Tombstones(DateTime<Utc>),
}

/// What a batch did in its transaction, and what is left for after its commit.
#[derive(Debug, Default)]
pub(super) struct FileBatch {
    /// Rows touched (`Unheld`, `Tombstones`).
    pub touched: u64,
    /// Files whose bytes to delete once the transaction committed.
    pub to_delete: Vec<String>,
    /// Whether another batch may find more.
    pub more: bool,
}

fn unavailable(e: BlobError) -> StoreError {
    StoreError::unavailable(format!("blob storage: {e}"))
}

/// Runs `step`'s transactional part in `tx`. `cursor`: where the orphan listing stands in this
/// pass; `window`: how far back before the cutoff it starts.
pub(super) async fn batch(
    store: &dyn Store,
    work: &FileWork<'_>,
    tx: &mut dyn Transaction,
    step: FileStep,
    (now, limit, window): (DateTime<Utc>, u32, Duration),
    cursor: &mut Option<String>,
) -> Result<FileBatch, StoreError> {
    let full = |n: usize| n >= limit as usize;
    Ok(match step {
        FileStep::Deleting => {
            let ids = store.files_deleting(tx, limit).await?;
            FileBatch { more: full(ids.len()), to_delete: ids, touched: 0 }
        }
        FileStep::Unheld => {
            let n = store.files_mark_unheld(tx, now, limit).await?;
            FileBatch { touched: n, more: n >= u64::from(limit), to_delete: Vec::new() }
        }
        FileStep::Claim(cutoff) => {
            let ids = store.files_claim(tx, cutoff, now, limit).await?;
            FileBatch { more: full(ids.len()), to_delete: ids, touched: 0 }
        }
        FileStep::Orphans(cutoff) => {
            orphans(store, work, tx, (cutoff, now, limit, window), cursor).await?
        }
        FileStep::Tombstones(cutoff) => {
            let n = store.files_drop_tombstones(tx, cutoff, limit).await?;
            FileBatch { touched: n, more: n >= u64::from(limit), to_delete: Vec::new() }
        }
    })
}

/// One page of the listing, from the window's start (or where the last page ended): each blob
/// written before the cutoff under an id the runtime made, that no store names, is claimed.
async fn orphans(
    store: &dyn Store,
    work: &FileWork<'_>,
    tx: &mut dyn Transaction,
    (cutoff, now, limit, window): (DateTime<Utc>, DateTime<Utc>, u32, Duration),
    cursor: &mut Option<String>,
) -> Result<FileBatch, StoreError> {
    let after =
        cursor.take().unwrap_or_else(|| File::id_floor(jadpo_core::clock::before(cutoff, window)));
    let page = work.blobs.list(&after, limit).await.map_err(unavailable)?;
    let mut out = FileBatch { more: page.len() >= limit as usize, ..FileBatch::default() };
    *cursor = page.last().map(|b| b.id.clone());
    for blob in page {
        // Only ids the runtime made, and only before the cutoff: the listing is in id order,
        // ids are time-ordered, so the first past the cutoff ends the pass's listing.
        let Some(made) = File::id_time(&blob.id) else { continue };
        if made >= cutoff {
            out.more = false;
            break;
        }
        if blob.written_at >= cutoff || named_elsewhere(store, work, &blob.id).await? {
            continue;
        }
        if store.file_claim_orphan(tx, &blob.id, now).await? {
            out.to_delete.push(blob.id);
        }
    }
    Ok(out)
}

/// Whether a store other than `store` has a row for `id`.
async fn named_elsewhere(
    store: &dyn TransactionalStore,
    work: &FileWork<'_>,
    id: &str,
) -> Result<bool, StoreError> {
    for other in work.stores.iter().filter(|s| s.name() != store.name()) {
        if other.file_get(id).await?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// After the claiming transaction committed: deletes each claimed file's bytes, then makes its
/// row a tombstone. Returns how many files it finished; stops at the first storage failure (the
/// files stay claimed, and the next pass finishes them).
pub(super) async fn delete_bytes(
    store: &dyn Store,
    work: &FileWork<'_>,
    ids: &[String],
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut done = 0;
    for id in ids {
        if let Err(e) = work.blobs.delete(id).await {
            tracing::warn!(store = store.name(), file = %id, error = %e, "could not delete a claimed file's bytes; the next pass tries again");
            return Err(unavailable(e));
        }
        crate::fault!("housekeeping.after_bytes_deleted");
        store.file_mark_deleted(id, now).await?;
        tracing::info!(store = store.name(), file = %id, "file bytes deleted");
        done += 1;
    }
    Ok(done)
}
