//! The file-count role: `jadpo_files`, how many fields hold each stored file, the triggers that
//! keep it (generated per declared field), and housekeeping's steps towards deleting the bytes
//! of a file no field holds (see [`crate::model::file_field`] for the states).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::file::File;
use crate::model::file_field::{FileField, Quota, StoredFile, Usage};
use crate::transaction::Transaction;

/// The file-count role.
#[async_trait]
pub trait FileStore: Send + Sync {
    /// Installs (or replaces) `field`'s trigger inside `tx`; when it was not there yet, adds the
    /// files the table's existing rows hold to the counts, in the same transaction (which holds
    /// off writers to the table meanwhile). Returns whether the trigger was new.
    async fn file_trigger_install(
        &self,
        tx: &mut dyn Transaction,
        field: &FileField,
    ) -> Result<bool, StoreError>;
    /// Up to 100 records of `field`'s table holding file `file_id`: each one's column (the file,
    /// as JSON text) and owner (`None` without an owner column, or none recorded).
    async fn file_holders(
        &self,
        field: &FileField,
        file_id: &str,
    ) -> Result<Vec<(String, Option<String>)>, StoreError>;
    /// Whether `field`'s trigger is installed.
    async fn file_trigger_exists(&self, field: &FileField) -> Result<bool, StoreError>;
    /// An upload's bytes are stored: its row, held by no field yet, recording `uploader` and
    /// what `file` says of itself, if `uploader`'s files still fit `quota` with it. Returns the
    /// row as it stands (a row already there is left as it is), or `None` when the quota
    /// refused it and nothing was written.
    async fn file_register(
        &self,
        file: &File,
        uploader: &str,
        quota: Quota,
        now: DateTime<Utc>,
    ) -> Result<Option<StoredFile>, StoreError>;
    /// What `uploader` keeps uploaded (files not yet deleted).
    async fn file_usage(&self, uploader: &str) -> Result<Usage, StoreError>;
    /// File `file_id`'s row.
    async fn file_get(&self, file_id: &str) -> Result<Option<StoredFile>, StoreError>;
    /// File `file_id`'s row, read inside `tx` (an action checking the file a request names).
    async fn file_get_in(
        &self,
        tx: &mut dyn Transaction,
        file_id: &str,
    ) -> Result<Option<StoredFile>, StoreError>;
    /// Notes `now` as when up to `limit` live files held by no field were first seen so.
    async fn files_mark_unheld(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError>;
    /// Claims for deletion up to `limit` live files held by no field since before `cutoff`.
    async fn files_claim(
        &self,
        tx: &mut dyn Transaction,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError>;
    /// Up to `limit` files claimed for deletion, whose bytes may still be stored.
    async fn files_deleting(
        &self,
        tx: &mut dyn Transaction,
        limit: u32,
    ) -> Result<Vec<String>, StoreError>;
    /// Claimed file `file_id`'s bytes are gone: its row becomes a tombstone.
    async fn file_mark_deleted(&self, file_id: &str, now: DateTime<Utc>) -> Result<(), StoreError>;
    /// Claims stored bytes that no row names for deletion; false if a row names them now.
    async fn file_claim_orphan(
        &self,
        tx: &mut dyn Transaction,
        file_id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Removes up to `limit` tombstones written before `cutoff`.
    async fn files_drop_tombstones(
        &self,
        tx: &mut dyn Transaction,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError>;
}
