//! The blob port: where a [`File`](crate::model::file::File)'s bytes live.
//!
//! Deployed, a private S3 bucket (to come); locally, a directory (`jadpo-runtime`'s `DirBlobs`,
//! under `./.jadpo/files/`). A blob is written once under its file id, whole or not at all, before
//! the row that references it commits; so a blob may exist that no row references (its row never
//! committed), and housekeeping finds those by listing blobs older than a grace period. A blob a
//! row references is never overwritten: a second write under the same id is refused.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

pub use crate::model::file::id_ok as blob_id_ok;

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The id is not a file id (letters, digits, `-`, `_`; 1 to 64): refused before any I/O.
    #[error("{0:?} is not a file id")]
    BadId(String),
    /// A blob with this id exists already; blobs are written once.
    #[error("blob {0} exists already: a file's bytes are written once")]
    Exists(String),
    /// The storage failed; retry later.
    #[error("blob storage failed: {0}")]
    Unavailable(String),
}

/// A stored blob, as a listing gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobInfo {
    /// The file id it is stored under.
    pub id: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was written (the storage's own clock).
    pub written_at: DateTime<Utc>,
}

/// Where files' bytes are kept.
#[async_trait]
pub trait Blobs: Send + Sync {
    /// Stores `bytes` as blob `id`, whole or not at all; [`BlobError::Exists`] if it exists.
    async fn put(&self, id: &str, bytes: &[u8]) -> Result<(), BlobError>;

    /// The bytes of blob `id`; `None` if there is none.
    async fn get(&self, id: &str) -> Result<Option<Vec<u8>>, BlobError>;

    /// Deletes blob `id`; `false` if there was none.
    async fn delete(&self, id: &str) -> Result<bool, BlobError>;

    /// At most `limit` blobs with ids after `after`, in id order (a page of a listing).
    async fn list(&self, after: &str, limit: u32) -> Result<Vec<BlobInfo>, BlobError>;
}
