//! `FileSql`: the slots of the file-count role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_files`. Batches pick at most `limit` rows in a
    /// subquery (PostgreSQL skips rows a writer holds, so a batch never waits on one).
    pub struct FileSql {
        /// An upload's bytes are stored: its row, held by no field yet (nothing if it exists, or
        /// if the uploader's live files would exceed `max_files` or `max_bytes` with it).
        register: Register(
            file_id: String,
            now: DateTime<Utc>,
            uploader: String,
            name: String,
            content_type: String,
            size: i64,
            sha256: String,
            max_files: i64,
            max_bytes: i64,
        ),
        /// Returns `files, bytes`: the uploader's live files.
        usage: Usage(uploader: String),
        /// Returns `file_id, refs, state, unheld_since, updated_at, uploader, name,
        /// content_type, size, sha256`.
        get: Get(file_id: String),
        /// Live files held by no field and not yet seen so: seen now.
        mark_unheld: MarkUnheld(now: DateTime<Utc>, limit: i64),
        /// Returns `file_id`: live files held by no field since before `cutoff`, now `deleting`.
        claim: Claim(cutoff: DateTime<Utc>, now: DateTime<Utc>, limit: i64),
        /// Returns `file_id`: files claimed for deletion whose bytes may still be stored.
        deleting: Deleting(limit: i64),
        /// A claimed file's bytes are gone: a tombstone.
        mark_deleted: MarkDeleted(file_id: String, now: DateTime<Utc>),
        /// A file no store knows (bytes stored, row never written): claimed for deletion, unless
        /// a row appeared meanwhile (nothing then).
        claim_orphan: ClaimOrphan(file_id: String, now: DateTime<Utc>),
        /// Tombstones older than `cutoff`.
        drop_tombstones: DropTombstones(cutoff: DateTime<Utc>, limit: i64),
    }
}
