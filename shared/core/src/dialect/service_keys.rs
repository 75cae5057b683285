//! The service-key role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::id::new_id;
use crate::model::service_key::{IssuedKey, KeyError, PREFIX, verifier};
use crate::ports::ServiceKeyStore;
use crate::sql::SqlValue;
use crate::transaction::TransactionalStore;

/// The statements an adapter supplies for service keys.
#[derive(Debug)]
pub struct AuthSql {
    /// `(id, service, verifier, issued_at, expires_at)`.
    pub key_insert: &'static str,
    /// `(verifier, now)` → `service` of a live key.
    pub key_find_live: &'static str,
}

/// An adapter that speaks service keys through its own [`AuthSql`].
pub trait AuthDialect: TransactionalStore {
    /// The adapter's statements.
    fn auth_sql(&self) -> &'static AuthSql;
}

fn valid_service(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[async_trait]
impl<S: AuthDialect> ServiceKeyStore for S {
    async fn service_key_issue(
        &self,
        service: &str,
        expires_at: Option<DateTime<Utc>>,
        clock: &dyn Clock,
    ) -> Result<IssuedKey, KeyError> {
        if !valid_service(service) {
            return Err(KeyError::BadService(service.to_owned()));
        }
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
        let secret =
            format!("{PREFIX}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let id = new_id(clock).to_string();
        let params = [
            id.as_str().into(),
            service.into(),
            verifier(&secret).into(),
            clock.now().into(),
            expires_at.map_or(SqlValue::Null, SqlValue::from),
        ];
        let mut tx = self.begin().await?;
        tx.execute(self.auth_sql().key_insert, &params).await?;
        tx.commit().await?;
        Ok(IssuedKey { secret, id, service: service.to_owned(), expires_at })
    }

    async fn service_key_verify(
        &self,
        presented: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        if !presented.starts_with(PREFIX) || presented.len() != PREFIX.len() + 64 {
            return Ok(None);
        }
        let mut tx = self.begin().await?;
        let row = tx
            .query_opt(self.auth_sql().key_find_live, &[verifier(presented).into(), now.into()])
            .await?;
        tx.rollback().await?;
        row.map(|r| r.get_str("service").map(str::to_owned)).transpose()
    }
}
