//! The breaker role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::alert::Alert;
use jadpo_core::model::breaker::{Breaker, State};
use jadpo_core::ports::BreakerStore;
use jadpo_core::sql::Row;
use jadpo_core::transaction::{Transaction, TransactionalStore};

use crate::rows::Id;
use crate::store::SqlStore;
use crate::tables::breaker;

crate::columns! {
    /// A breaker (`BreakerSql::get`, `lock`, `list`).
    struct BreakerColumns {
        connection: String,
        state: String,
        failures: i64,
        opened_at: Option<DateTime<Utc>>,
        pause_ms: i64,
        reopen_at: Option<DateTime<Utc>>,
        probe_delivery: Option<String>,
        probe_started_at: Option<DateTime<Utc>>,
        alert_at: Option<DateTime<Utc>>,
        alert_raised_at: Option<DateTime<Utc>>,
    }
    /// `BreakerSql::alerts`.
    struct OpenColumns { connection: String, opened_at: Option<DateTime<Utc>> }
}

fn breaker(r: &Row) -> Result<Breaker, StoreError> {
    let b = BreakerColumns::read(r)?;
    let state = State::parse(&b.state)
        .ok_or_else(|| StoreError::internal(format!("unknown breaker state {:?}", b.state)))?;
    Ok(Breaker {
        connection: b.connection,
        state,
        failures: u32::try_from(b.failures).unwrap_or(u32::MAX),
        opened_at: b.opened_at,
        pause_ms: b.pause_ms,
        reopen_at: b.reopen_at,
        probe_delivery: b.probe_delivery,
        probe_started_at: b.probe_started_at,
        alert_at: b.alert_at,
        alert_raised_at: b.alert_raised_at,
    })
}

#[async_trait]
impl<C: TransactionalStore> BreakerStore for SqlStore<C> {
    async fn breaker_lock(
        &self,
        tx: &mut dyn Transaction,
        connection: &str,
        now: DateTime<Utc>,
    ) -> Result<Breaker, StoreError> {
        let sql = self.sql.breaker;
        sql.ensure.execute(tx, breaker::Ensure { connection: connection.into(), now }).await?;
        breaker(&sql.lock.query_one(tx, breaker::Lock { connection: connection.into() }).await?)
    }

    async fn breaker_get(&self, connection: &str) -> Result<Option<Breaker>, StoreError> {
        let rows = self
            .sql
            .breaker
            .get
            .query_once(self, breaker::Get { connection: connection.into() })
            .await?;
        rows.first().map(breaker).transpose()
    }

    async fn breaker_write(
        &self,
        tx: &mut dyn Transaction,
        b: &Breaker,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let params = breaker::Write {
            connection: b.connection.as_str().into(),
            state: b.state.as_str().into(),
            failures: i64::from(b.failures),
            opened_at: b.opened_at,
            pause_ms: b.pause_ms,
            reopen_at: b.reopen_at,
            probe_delivery: b.probe_delivery.clone(),
            probe_started_at: b.probe_started_at,
            alert_at: b.alert_at,
            alert_raised_at: b.alert_raised_at,
            now,
        };
        self.sql.breaker.write.execute(tx, params).await?;
        Ok(())
    }

    async fn delivery_hold(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        connection: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let params = breaker::Hold { id: id.into(), connection: connection.into(), now, until };
        Ok(self.sql.breaker.hold.execute(tx, params).await? == 1)
    }

    async fn delivery_unhold(&self, tx: &mut dyn Transaction, id: &str) -> Result<(), StoreError> {
        self.sql.breaker.unhold.execute(tx, breaker::Unhold { id: id.into() }).await?;
        Ok(())
    }

    async fn breaker_release_held(
        &self,
        tx: &mut dyn Transaction,
        connection: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        let rows = self
            .sql
            .breaker
            .release
            .query(tx, breaker::Release { connection: connection.into(), now })
            .await?;
        rows.iter().map(|r| Id::read(r).map(|r| r.id)).collect()
    }

    async fn breakers_list(&self) -> Result<Vec<Breaker>, StoreError> {
        self.sql
            .breaker
            .list
            .query_once(self, breaker::List {})
            .await?
            .iter()
            .map(breaker)
            .collect()
    }

    async fn breaker_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError> {
        let rows = self
            .sql
            .breaker
            .alerts
            .query(tx, breaker::Alerts { now, limit: i64::from(limit) })
            .await?;
        rows.iter()
            .map(|r| {
                let open = OpenColumns::read(r)?;
                let since = open.opened_at.map_or_else(String::new, |t| t.to_rfc3339());
                Ok(Alert {
                    kind: "breaker.open",
                    item: open.connection,
                    detail: format!(
                        "circuit breaker open since {since}; deliveries calling it are held"
                    ),
                })
            })
            .collect()
    }
}
