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

use crate::store::SqlStore;
use crate::tables::files;

fn stored(r: &Row) -> Result<StoredFile, StoreError> {
    let state = r.get_str("state")?;
    Ok(StoredFile {
        file_id: r.get_str("file_id")?.to_owned(),
        refs: r.get_i64("refs")?,
        state: FileState::parse(state)
            .ok_or_else(|| StoreError::internal(format!("unknown file state {state:?}")))?,
        unheld_since: r.get_opt_timestamp("unheld_since")?,
        updated_at: r.get_opt_timestamp("updated_at")?,
        uploader: r.get_opt_str("uploader")?.map(str::to_owned),
        registered: registered(r)?,
    })
}

/// The file as its upload registered it, if an upload did.
fn registered(r: &Row) -> Result<Option<File>, StoreError> {
    let (Some(name), Some(content_type), Some(size), Some(sha256)) = (
        r.get_opt_str("name")?,
        r.get_opt_str("content_type")?,
        r.get_opt_i64("size")?,
        r.get_opt_str("sha256")?,
    ) else {
        return Ok(None);
    };
    let id = r.get_str("file_id")?;
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
    let as_count = |what: &str| -> Result<u64, StoreError> {
        Ok(u64::try_from(r.get_i64(what)?).unwrap_or(0))
    };
    Ok(Usage { files: as_count("files")?, bytes: as_count("bytes")? })
}

fn ids(rows: &[Row]) -> Result<Vec<String>, StoreError> {
    rows.iter().map(|r| r.get_str("file_id").map(str::to_owned)).collect()
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
        let had = tx.query_one(&(generated.trigger_count)(field), &[]).await?.get_i64("n")? > 0;
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
        rows.iter()
            .map(|r| {
                Ok((r.get_str("file")?.to_owned(), r.get_opt_str("owner")?.map(str::to_owned)))
            })
            .collect()
    }

    async fn file_trigger_exists(&self, field: &FileField) -> Result<bool, StoreError> {
        let rows = self.query_once(&(self.sql.files_generated.trigger_count)(field), &[]).await?;
        match rows.first() {
            Some(row) => Ok(row.get_i64("n")? > 0),
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
