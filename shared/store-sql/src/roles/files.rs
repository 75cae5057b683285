//! The file-count role over each adapter's own SQL: static statements in [`crate::FileSql`], and
//! the triggers generated from a field's declaration by the adapter itself
//! ([`crate::FileStatements`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::file::File;
use jadpo_core::model::file_field::{FileField, FileState, Quota, StoredFile, Usage};
use jadpo_core::ports::FileStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::rows::Count;
use crate::store::SqlStore;
use crate::tables::files;

crate::columns! {
    /// A stored file's count and what its upload registered (`FileSql::get`).
    struct FileColumns {
        file_id: String,
        refs: i64,
        state: String,
        unheld_since: Option<DateTime<Utc>>,
        updated_at: Option<DateTime<Utc>>,
        uploader: Option<String>,
        name: Option<String>,
        content_type: Option<String>,
        size: Option<i64>,
        sha256: Option<String>,
    }
    /// `FileSql::usage`.
    struct UsageColumns { files: u64, bytes: u64 }
    /// A file's id.
    struct FileId { file_id: String }
    /// A row holding a file (the generated `holders` statement).
    struct Holder { file: String, owner: Option<String> }
}

fn stored(r: &Row) -> Result<StoredFile, StoreError> {
    let r = FileColumns::read(r)?;
    let state = FileState::parse(&r.state)
        .ok_or_else(|| StoreError::internal(format!("unknown file state {:?}", r.state)))?;
    Ok(StoredFile {
        registered: registered(&r)?,
        file_id: r.file_id,
        refs: r.refs,
        state,
        unheld_since: r.unheld_since,
        updated_at: r.updated_at,
        uploader: r.uploader,
    })
}

/// The file as its upload registered it, if an upload did.
fn registered(r: &FileColumns) -> Result<Option<File>, StoreError> {
    let (Some(name), Some(content_type), Some(size), Some(sha256)) =
        (&r.name, &r.content_type, r.size, &r.sha256)
    else {
        return Ok(None);
    };
    let id = &r.file_id;
    let size = u64::try_from(size)
        .map_err(|_| StoreError::internal(format!("file {id} has a negative size")))?;
    File::new(id, name, content_type, size, sha256)
        .map(Some)
        .map_err(|e| StoreError::internal(format!("file {id}'s registered metadata: {e}")))
}

/// A count or a size as a parameter: a quota without a limit is the largest the database keeps.
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn usage_of(r: &Row) -> Result<Usage, StoreError> {
    let u = UsageColumns::read(r)?;
    Ok(Usage { files: u.files, bytes: u.bytes })
}

fn ids(rows: &[Row]) -> Result<Vec<String>, StoreError> {
    rows.iter().map(|r| FileId::read(r).map(|f| f.file_id)).collect()
}

#[async_trait]
impl<C: TransactionalStore> FileStore for SqlStore<C> {
    async fn file_trigger_install(
        &self,
        tx: &mut dyn Transaction,
        field: &FileField,
    ) -> Result<bool, StoreError> {
        let generated = &self.sql.files_generated;
        if let Some(lock) = (generated.lock)(field) {
            tx.batch(&lock).await?;
        }
        let had = Count::read(&tx.query_one(&(generated.trigger_count)(field), &[]).await?)?.n > 0;
        for statement in (generated.trigger_ddl)(field) {
            tx.batch(&statement).await?;
        }
        if !had {
            tx.execute(&(generated.count_existing)(field), &[]).await?;
        }
        Ok(!had)
    }

    async fn file_holders(
        &self,
        field: &FileField,
        file_id: &str,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let sql = (self.sql.files_generated.holders)(field);
        let rows = self.query_once(&sql, &[file_id.into()]).await?;
        rows.iter().map(|r| Holder::read(r).map(|h| (h.file, h.owner))).collect()
    }

    async fn file_trigger_exists(&self, field: &FileField) -> Result<bool, StoreError> {
        let rows = self.query_once(&(self.sql.files_generated.trigger_count)(field), &[]).await?;
        match rows.first() {
            Some(row) => Ok(Count::read(row)?.n > 0),
            None => Ok(false),
        }
    }

    async fn file_register(
        &self,
        file: &File,
        uploader: &str,
        quota: Quota,
        now: DateTime<Utc>,
    ) -> Result<Option<StoredFile>, StoreError> {
        let params = files::Register {
            file_id: file.id().into(),
            now,
            uploader: uploader.into(),
            name: file.name().into(),
            content_type: file.content_type().into(),
            size: count(file.size()),
            sha256: file.sha256().into(),
            max_files: count(quota.files),
            max_bytes: count(quota.bytes),
        };
        self.sql.files.register.execute_once(self, params).await?;
        self.file_get(file.id()).await
    }

    async fn file_usage(&self, uploader: &str) -> Result<Usage, StoreError> {
        let rows = self
            .sql
            .files
            .usage
            .query_once(self, files::Usage { uploader: uploader.into() })
            .await?;
        rows.first().map_or_else(|| Ok(Usage::default()), usage_of)
    }

    async fn file_get(&self, file_id: &str) -> Result<Option<StoredFile>, StoreError> {
        let rows =
            self.sql.files.get.query_once(self, files::Get { file_id: file_id.into() }).await?;
        rows.first().map(stored).transpose()
    }

    async fn file_get_in(
        &self,
        tx: &mut dyn Transaction,
        file_id: &str,
    ) -> Result<Option<StoredFile>, StoreError> {
        let rows = self.sql.files.get.query(tx, files::Get { file_id: file_id.into() }).await?;
        rows.first().map(stored).transpose()
    }

    async fn files_mark_unheld(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.sql.files.mark_unheld.execute(tx, files::MarkUnheld { now, limit: limit.into() }).await
    }

    async fn files_claim(
        &self,
        tx: &mut dyn Transaction,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let params = files::Claim { cutoff, now, limit: limit.into() };
        ids(&self.sql.files.claim.query(tx, params).await?)
    }

    async fn files_deleting(
        &self,
        tx: &mut dyn Transaction,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        ids(&self.sql.files.deleting.query(tx, files::Deleting { limit: limit.into() }).await?)
    }

    async fn file_mark_deleted(&self, file_id: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.sql
            .files
            .mark_deleted
            .execute_once(self, files::MarkDeleted { file_id: file_id.into(), now })
            .await?;
        Ok(())
    }

    async fn file_claim_orphan(
        &self,
        tx: &mut dyn Transaction,
        file_id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = files::ClaimOrphan { file_id: file_id.into(), now };
        Ok(self.sql.files.claim_orphan.execute(tx, params).await? == 1)
    }

    async fn files_drop_tombstones(
        &self,
        tx: &mut dyn Transaction,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.sql
            .files
            .drop_tombstones
            .execute(tx, files::DropTombstones { cutoff, limit: limit.into() })
            .await
    }
}
