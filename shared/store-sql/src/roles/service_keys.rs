//! The service-key role implemented once over each adapter's own SQL: only a key's verifier is
//! stored; a key is read back with what it may do.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::clock::Clock;
use jadpo_core::error::StoreError;
use jadpo_core::id::new_id;
use jadpo_core::model::principal::EntityRecord;
use jadpo_core::model::service_key::{
    IssuedKey, KeyError, KeyInfo, Scopes, VerifiedKey, new_secret, valid_service, verifier,
    well_formed,
};
use jadpo_core::ports::ServiceKeyStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::statement::Params;
use crate::store::SqlStore;
use crate::tables::service_keys;

crate::columns! {
    /// A key as listed (`ServiceKeySql::keys_list`, `key_get`).
    struct KeyColumns {
        id: String,
        service: String,
        scopes: String,
        issued_at: DateTime<Utc>,
        expires_at: Option<DateTime<Utc>>,
        revoked_at: Option<DateTime<Utc>>,
    }
    /// A live key found by its verifier (`ServiceKeySql::key_find_live`).
    struct LiveColumns { service: String, scopes: String }
}

fn scopes(stored: &str) -> Result<Scopes, StoreError> {
    Scopes::from_stored(stored).map_err(|e| StoreError::internal(format!("stored scopes: {e}")))
}

fn key_info(r: &Row) -> Result<KeyInfo, StoreError> {
    let k = KeyColumns::read(r)?;
    Ok(KeyInfo {
        scopes: scopes(&k.scopes)?,
        id: k.id,
        service: k.service,
        issued_at: k.issued_at,
        expires_at: k.expires_at,
        revoked_at: k.revoked_at,
    })
}

#[async_trait]
impl<C: TransactionalStore> ServiceKeyStore for SqlStore<C> {
    async fn service_key_issue(
        &self,
        tx: &mut dyn Transaction,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        scopes: &Scopes,
        clock: &dyn Clock,
    ) -> Result<IssuedKey, KeyError> {
        if !valid_service(service) {
            return Err(KeyError::BadService(service.to_owned()));
        }
        let secret = new_secret()?;
        let id = new_id(clock).to_string();
        let params = service_keys::KeyInsert {
            id: id.as_str().into(),
            service: service.into(),
            verifier: verifier(&secret),
            issued_at: clock.now(),
            expires_at,
            scopes: scopes.to_stored(),
        };
        self.sql.service_keys.key_insert.execute(tx, params).await?;
        Ok(IssuedKey {
            secret,
            id,
            service: service.to_owned(),
            expires_at,
            scopes: scopes.clone(),
        })
    }

    async fn service_key_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
        services: Option<EntityRecord<'_>>,
    ) -> Result<Option<VerifiedKey>, StoreError> {
        if !well_formed(presented) {
            return Ok(None);
        }
        let params = service_keys::KeyFindLive { verifier: verifier(presented), now };
        let find = self.sql.service_keys.key_find_live;
        let rows = match services {
            None => find.query_once(self, params).await?,
            Some(s) => {
                self.query_once(&s.narrow(find.text(), "service"), params.bind().as_ref()).await?
            }
        };
        rows.first()
            .map(|r| {
                let live = LiveColumns::read(r)?;
                Ok(VerifiedKey { scopes: scopes(&live.scopes)?, service: live.service })
            })
            .transpose()
    }

    async fn service_keys_list(&self) -> Result<Vec<KeyInfo>, StoreError> {
        self.sql
            .service_keys
            .keys_list
            .query_once(self, service_keys::KeysList {})
            .await?
            .iter()
            .map(key_info)
            .collect()
    }

    async fn service_key_get(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<Option<KeyInfo>, StoreError> {
        let row = self
            .sql
            .service_keys
            .key_get
            .query_opt(tx, service_keys::KeyGet { id: id.into() })
            .await?;
        row.as_ref().map(key_info).transpose()
    }

    async fn service_key_revoke(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self
            .sql
            .service_keys
            .key_revoke
            .execute(tx, service_keys::KeyRevoke { id: id.into(), now })
            .await?
            == 1)
    }
}
