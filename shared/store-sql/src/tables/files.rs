//! `FileSql`: the slots of the file-count role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_files`. Batches pick at most `limit` rows in a
    /// subquery (PostgreSQL skips rows a writer holds, so a batch never waits on one).
    pub struct FileSql {
        /// An upload's bytes are stored: its row, held by no field yet (nothing if it exists, or
        /// if the uploader's live files would exceed `max_files` or `max_bytes` with it).
        register(file_id, now, uploader, name, content_type, size, sha256, max_files, max_bytes),
        /// Returns `files, bytes`: the uploader's live files.
        usage(uploader),
        /// Returns `file_id, refs, state, unheld_since, updated_at, uploader, name,
        /// content_type, size, sha256`.
        get(file_id),
        /// Live files held by no field and not yet seen so: seen now.
        mark_unheld(now, limit),
        /// Returns `file_id`: live files held by no field since before `cutoff`, now `deleting`.
        claim(cutoff, now, limit),
        /// Returns `file_id`: files claimed for deletion whose bytes may still be stored.
        deleting(limit),
        /// A claimed file's bytes are gone: a tombstone.
        mark_deleted(file_id, now),
        /// A file no store knows (bytes stored, row never written): claimed for deletion, unless
        /// a row appeared meanwhile (nothing then).
        claim_orphan(file_id, now),
        /// Tombstones older than `cutoff`.
        drop_tombstones(cutoff, limit),
    }
}
