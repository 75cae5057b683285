//! The file-count role over each adapter's own SQL: static statements in [`crate::FileSql`], and
//! the triggers generated from a field's declaration by the adapter itself
//! ([`crate::FileStatements`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::file_field::{FileField, FileState, StoredFile};
use jadpo_core::ports::FileStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::store::SqlStore;

fn stored(r: &Row) -> Result<StoredFile, StoreError> {
    let state = r.get_str("state")?;
    Ok(StoredFile {
        file_id: r.get_str("file_id")?.to_owned(),
        refs: r.get_i64("refs")?,
        state: FileState::parse(state)
            .ok_or_else(|| StoreError::internal(format!("unknown file state {state:?}")))?,
        unheld_since: r.get_opt_timestamp("unheld_since")?,
        updated_at: r.get_opt_timestamp("updated_at")?,
    })
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
        file_id: &str,
        now: DateTime<Utc>,
    ) -> Result<StoredFile, StoreError> {
        self.sql.files.register.execute_once(self, [file_id.into(), now.into()]).await?;
        self.file_get(file_id)
            .await?
            .ok_or_else(|| StoreError::internal(format!("file {file_id} vanished on upload")))
    }

    async fn file_get(&self, file_id: &str) -> Result<Option<StoredFile>, StoreError> {
        let rows = self.sql.files.get.query_once(self, [file_id.into()]).await?;
        rows.first().map(stored).transpose()
    }

    async fn files_mark_unheld(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.sql.files.mark_unheld.execute(tx, [now.into(), limit.into()]).await
    }

    async fn files_claim(
        &self,
        tx: &mut dyn Transaction,
        cutoff: DateTime<Utc>,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let params = [cutoff.into(), now.into(), limit.into()];
        ids(&self.sql.files.claim.query(tx, params).await?)
    }

    async fn files_deleting(
        &self,
        tx: &mut dyn Transaction,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        ids(&self.sql.files.deleting.query(tx, [limit.into()]).await?)
    }

    async fn file_mark_deleted(&self, file_id: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.sql.files.mark_deleted.execute_once(self, [file_id.into(), now.into()]).await?;
        Ok(())
    }

    async fn file_claim_orphan(
        &self,
        tx: &mut dyn Transaction,
        file_id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = [file_id.into(), now.into()];
        Ok(self.sql.files.claim_orphan.execute(tx, params).await? == 1)
    }

    async fn files_drop_tombstones(
        &self,
        tx: &mut dyn Transaction,
        cutoff: DateTime<Utc>,
        limit: u32,
    ) -> Result<u64, StoreError> {
        self.sql.files.drop_tombstones.execute(tx, [cutoff.into(), limit.into()]).await
    }
}
