//! The breaker role implemented once over each adapter's own SQL.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::model::alert::Alert;
use crate::model::breaker::{Breaker, State};
use crate::ports::BreakerStore;
use crate::sql::{Row, SqlValue};
use crate::transaction::{Transaction, TransactionalStore};

/// One dialect's statements for `jadpo_circuit_breakers` and held deliveries.
#[derive(Debug)]
pub struct BreakerSql {
    /// `(connection, now)`: create a closed breaker unless one exists.
    pub ensure: &'static str,
    /// `(connection)` → the row ([`Breaker`]'s columns), locked where the dialect can.
    pub lock: &'static str,
    /// `(connection, state, failures, opened_at, pause_ms, reopen_at, probe_delivery,
    /// probe_started_at, alert_at, alert_raised_at, now)`: the whole row.
    pub write: &'static str,
    /// `(id, connection, now, until)`: hold a pending delivery until `until`.
    pub hold: &'static str,
    /// `(id)`: the delivery let through as the probe is no longer held.
    pub unhold: &'static str,
    /// `(connection, now)`: release the held pending deliveries of `connection`, due now.
    pub release: &'static str,
    /// `()` → every breaker, by connection.
    pub list: &'static str,
    /// `(now, limit)` → `connection, opened_at`: open breakers past their alert time whose alert
    /// is not raised, marking it raised.
    pub alerts: &'static str,
}

/// An adapter that speaks breakers through its own [`BreakerSql`].
pub trait BreakerDialect: TransactionalStore {
    /// The adapter's statements.
    fn breaker_sql(&self) -> &'static BreakerSql;
}

fn breaker(r: &Row) -> Result<Breaker, StoreError> {
    let state = r.get_str("state")?;
    Ok(Breaker {
        connection: r.get_str("connection")?.to_owned(),
        state: State::parse(state)
            .ok_or_else(|| StoreError::internal(format!("unknown breaker state {state:?}")))?,
        failures: u32::try_from(r.get_i64("failures")?).unwrap_or(u32::MAX),
        opened_at: r.get_opt_timestamp("opened_at")?,
        pause_ms: r.get_i64("pause_ms")?,
        reopen_at: r.get_opt_timestamp("reopen_at")?,
        probe_delivery: r.get_opt_str("probe_delivery")?.map(str::to_owned),
        probe_started_at: r.get_opt_timestamp("probe_started_at")?,
        alert_at: r.get_opt_timestamp("alert_at")?,
        alert_raised_at: r.get_opt_timestamp("alert_raised_at")?,
    })
}

fn time(t: Option<DateTime<Utc>>) -> SqlValue {
    t.map_or(SqlValue::Null, SqlValue::from)
}

#[async_trait]
impl<S: BreakerDialect> BreakerStore for S {
    async fn breaker_lock(
        &self,
        tx: &mut dyn Transaction,
        connection: &str,
        now: DateTime<Utc>,
    ) -> Result<Breaker, StoreError> {
        let sql = self.breaker_sql();
        tx.execute(sql.ensure, &[connection.into(), now.into()]).await?;
        breaker(&tx.query_one(sql.lock, &[connection.into()]).await?)
    }

    async fn breaker_write(
        &self,
        tx: &mut dyn Transaction,
        b: &Breaker,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let params = [
            b.connection.as_str().into(),
            b.state.as_str().into(),
            i64::from(b.failures).into(),
            time(b.opened_at),
            b.pause_ms.into(),
            time(b.reopen_at),
            b.probe_delivery.as_deref().map_or(SqlValue::Null, SqlValue::from),
            time(b.probe_started_at),
            time(b.alert_at),
            time(b.alert_raised_at),
            now.into(),
        ];
        tx.execute(self.breaker_sql().write, &params).await?;
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
        let params = [id.into(), connection.into(), now.into(), until.into()];
        Ok(tx.execute(self.breaker_sql().hold, &params).await? == 1)
    }

    async fn delivery_unhold(&self, tx: &mut dyn Transaction, id: &str) -> Result<(), StoreError> {
        tx.execute(self.breaker_sql().unhold, &[id.into()]).await?;
        Ok(())
    }

    async fn breaker_release_held(
        &self,
        tx: &mut dyn Transaction,
        connection: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        tx.execute(self.breaker_sql().release, &[connection.into(), now.into()]).await
    }

    async fn breakers_list(&self) -> Result<Vec<Breaker>, StoreError> {
        self.query_once(self.breaker_sql().list, &[]).await?.iter().map(breaker).collect()
    }

    async fn breaker_alerts(
        &self,
        tx: &mut dyn Transaction,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Alert>, StoreError> {
        let rows =
            tx.query(self.breaker_sql().alerts, &[now.into(), i64::from(limit).into()]).await?;
        rows.iter()
            .map(|r| {
                let since =
                    r.get_opt_timestamp("opened_at")?.map_or_else(String::new, |t| t.to_rfc3339());
                Ok(Alert {
                    kind: "breaker.open",
                    item: r.get_str("connection")?.to_owned(),
                    detail: format!(
                        "circuit breaker open since {since}; deliveries calling it are held"
                    ),
                })
            })
            .collect()
    }
}
