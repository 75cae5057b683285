//! The service-key role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::clock::Clock;
use jadpo_core::error::StoreError;
use jadpo_core::id::new_id;
use jadpo_core::model::service_key::{
    IssuedKey, KeyError, new_secret, valid_service, verifier, well_formed,
};
use jadpo_core::ports::ServiceKeyStore;
use jadpo_core::sql::SqlValue;
use jadpo_core::transaction::TransactionalStore;

use crate::store::SqlStore;

#[async_trait]
impl<C: TransactionalStore> ServiceKeyStore for SqlStore<C> {
    async fn service_key_issue(
        &self,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        clock: &dyn Clock,
    ) -> Result<IssuedKey, KeyError> {
        if !valid_service(service) {
            return Err(KeyError::BadService(service.to_owned()));
        }
        let secret = new_secret()?;
        let id = new_id(clock).to_string();
        let params = [
            id.as_str().into(),
            service.into(),
            verifier(&secret).into(),
            clock.now().into(),
            expires_at.map_or(SqlValue::Null, SqlValue::from),
        ];
        let mut tx = self.begin().await?;
        self.sql.service_keys.key_insert.execute(tx.as_mut(), params).await?;
        tx.commit().await?;
        Ok(IssuedKey { secret, id, service: service.to_owned(), expires_at })
    }

    async fn service_key_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        if !well_formed(presented) {
            return Ok(None);
        }
        let mut tx = self.begin().await?;
        let row = self
            .sql
            .service_keys
            .key_find_live
            .query_opt(tx.as_mut(), [verifier(presented).into(), now.into()])
            .await?;
        tx.rollback().await?;
        row.map(|r| r.get_str("service").map(str::to_owned)).transpose()
    }
}
