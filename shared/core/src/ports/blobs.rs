//! The blob port: where a [`File`](crate::model::file::File)'s bytes live.
//!
//! Deployed, a private S3 bucket (`jadpo-blobs-s3`); locally, a directory (`jadpo-runtime`'s `DirBlobs`,
//! under `./.jadpo/files/`). A blob is written once under its file id, whole or not at all, before
//! the row that references it commits; so a blob may exist that no row references (its row never
//! committed), and housekeeping finds those by listing blobs older than a grace period. A blob a
//! row references is never overwritten: a second write under the same id is refused.
//!
//! Storage that clients may reach themselves (S3) also hands out [`Urls`]: a presigned `PUT`
//! that writes one blob, once, with the size, type and SHA-256 the server agreed to, and a
//! presigned `GET`. That is how a deployed application's bytes never pass through a function:
//! the function only signs, and checks what landed before a row may hold it. A directory has no
//! URLs; the local server takes and serves the bytes itself.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

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

    /// The storage's presigned URLs, if clients may reach it themselves; `None` (the default):
    /// bytes go through the server.
    fn urls(&self) -> Option<&dyn Urls> {
        None
    }
}

/// What a presigned upload must carry: the storage refuses any other body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadTerms {
    /// Its exact size in bytes.
    pub size: u64,
    /// Its content type, stored with it.
    pub content_type: String,
    /// Its SHA-256, lowercase hex: the storage checks the body against it.
    pub sha256: String,
}

/// A presigned request a client makes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presigned {
    /// `PUT` or `GET`.
    pub method: String,
    /// The URL, its signature in its query.
    pub url: String,
    /// The headers the request must carry, as signed (name, value).
    pub headers: Vec<(String, String)>,
    /// When the URL stops working.
    pub expires_at: DateTime<Utc>,
}

/// What the storage holds under an id, as it recorded it on the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobHead {
    /// Its size in bytes.
    pub size: u64,
    /// The content type stored with it.
    pub content_type: Option<String>,
    /// The SHA-256 the storage checked the body against (lowercase hex), if one was given.
    pub sha256: Option<String>,
}

/// Presigned URLs over a storage clients reach themselves.
#[async_trait]
pub trait Urls: Send + Sync {
    /// A `PUT` that writes blob `id` once, with exactly `terms`, valid from `at` for `ttl`.
    async fn upload_url(
        &self,
        id: &str,
        terms: &UploadTerms,
        at: DateTime<Utc>,
        ttl: std::time::Duration,
    ) -> Result<Presigned, BlobError>;

    /// A `GET` of blob `id`, answered as an attachment named `name` of type `content_type`,
    /// valid from `at` for `ttl`.
    async fn download_url(
        &self,
        id: &str,
        (name, content_type): (&str, &str),
        at: DateTime<Utc>,
        ttl: std::time::Duration,
    ) -> Result<Presigned, BlobError>;

    /// What is stored as blob `id`; `None` if nothing is.
    async fn head(&self, id: &str) -> Result<Option<BlobHead>, BlobError>;
}
