//! Operators' view of deliveries and their changes, implemented once over each adapter's own
//! SQL.
//!
//! Why two page statements: a page of one status reads the `(status, created_at, id)` index and
//! a page of any status the `(created_at, id)` one, each from where the last page ended, so no
//! page sorts or skips rows, however many deliveries there are. Bounds stand in for filters
//! not given (the earliest and latest times either dialect keeps), so every page statement
//! names its keyset the same way.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use jadpo_core::error::StoreError;
use jadpo_core::model::delivery::{
    DeadGroup, Delivery, DeliveryQuery, DeliveryStatus, DeliverySummary,
};
use jadpo_core::ports::DeliveryAdminStore;
use jadpo_core::transaction::{Transaction, TransactionalStore, commit_or_rollback};

use crate::rows;
use crate::rows::first_count;
use crate::statement::Params;
use crate::statement::Statement;
use crate::store::SqlStore;
use crate::tables::delivery_admin;

/// The earliest and latest times a page bound stands for, within both dialects' range.
fn bounds() -> (DateTime<Utc>, DateTime<Utc>) {
    let at = |y| {
        DateTime::from_naive_utc_and_offset(
            chrono::NaiveDate::from_ymd_opt(y, 1, 1)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .unwrap_or_default(),
            Utc,
        )
    };
    (at(1), at(9999))
}

/// Runs `statement` for an operator's page: on PostgreSQL in a read transaction whose plans are
/// made for their parameters ([`DeliveryAdminSql::custom_plans`]), elsewhere on its own.
///
/// [`DeliveryAdminSql::custom_plans`]: crate::DeliveryAdminSql
pub(crate) async fn page_read<C: TransactionalStore, P: Params + Send>(
    store: &SqlStore<C>,
    statement: Statement<P>,
    params: P,
) -> Result<Vec<jadpo_core::Row>, StoreError> {
    let setup = store.sql.delivery_admin.custom_plans;
    if setup.text().is_empty() {
        return statement.query_once(store, params).await;
    }
    let mut tx = store.begin().await?;
    let rows = async {
        setup.query(tx.as_mut(), delivery_admin::CustomPlans {}).await?;
        statement.query(tx.as_mut(), params).await
    }
    .await;
    commit_or_rollback(tx, rows).await
}

crate::columns! {
    /// `DeliveryAdminSql::oldest_pending`.
    struct Oldest { oldest: Option<DateTime<Utc>> }
    /// `DeliveryAdminSql::dead_groups`.
    struct DeadGroupColumns {
        subscriber: String,
        last_failure: Option<String>,
        n: u64,
        newest: Option<DateTime<Utc>>,
    }
}

#[async_trait]
impl<C: TransactionalStore> DeliveryAdminStore for SqlStore<C> {
    async fn deliveries_page(&self, query: &DeliveryQuery) -> Result<Vec<Delivery>, StoreError> {
        let (earliest, latest) = bounds();
        let from = query.created_from.unwrap_or(earliest);
        let (before_at, before_id) = match &query.before {
            Some((at, id)) => (*at, id.clone()),
            // Before (`to`, ""): every id is after "", so this is `created_at < to`.
            None => (query.created_to.unwrap_or(latest), String::new()),
        };
        let (subscriber, event_type) = (query.subscriber.clone(), query.event_type.clone());
        let held = query.held_by.clone();
        let limit = i64::from(query.limit.clamp(1, 1000));
        let sql = &self.sql.delivery_admin;
        let rows = match query.status {
            None => {
                let params = delivery_admin::PageAll {
                    subscriber,
                    event_type,
                    held,
                    from,
                    before_at,
                    before_id,
                    limit,
                };
                page_read(self, sql.page_all, params).await?
            }
            Some(status) => {
                let params = delivery_admin::PageStatus {
                    status: status.as_str().into(),
                    subscriber,
                    event_type,
                    held,
                    from,
                    before_at,
                    before_id,
                    limit,
                };
                page_read(self, sql.page_status, params).await?
            }
        };
        rows.iter().map(rows::delivery).collect()
    }

    async fn deliveries_summary(
        &self,
        since: DateTime<Utc>,
        cap: u32,
    ) -> Result<DeliverySummary, StoreError> {
        let sql = &self.sql.delivery_admin;
        let capped = i64::from(cap);
        let mut counts = Vec::new();
        for status in [
            DeliveryStatus::Pending,
            DeliveryStatus::Dead,
            DeliveryStatus::Handled,
            DeliveryStatus::Discarded,
        ] {
            let params =
                delivery_admin::CountStatus { status: status.as_str().into(), cap: capped };
            let rows = page_read(self, sql.count_status, params).await?;
            counts.push((status, first_count(&rows)?));
        }
        let rows = page_read(
            self,
            sql.count_dead_since,
            delivery_admin::CountDeadSince { since, cap: capped },
        )
        .await?;
        let dead_since = first_count(&rows)?;
        let rows = sql.oldest_pending.query_once(self, delivery_admin::OldestPending {}).await?;
        let oldest_pending = rows.first().map(Oldest::read).transpose()?.and_then(|o| o.oldest);
        Ok(DeliverySummary { counts, dead_since, oldest_pending, cap: u64::from(cap) })
    }

    async fn dead_groups(&self, limit: u32, window: u32) -> Result<Vec<DeadGroup>, StoreError> {
        let params = delivery_admin::DeadGroups {
            limit: i64::from(limit.clamp(1, 1000)),
            window: i64::from(window.clamp(1, 100_000)),
        };
        let rows = page_read(self, self.sql.delivery_admin.dead_groups, params).await?;
        rows.iter()
            .map(|r| {
                let g = DeadGroupColumns::read(r)?;
                Ok(DeadGroup {
                    subscriber: g.subscriber,
                    failure: g.last_failure,
                    count: g.n,
                    newest: g.newest,
                })
            })
            .collect()
    }

    async fn delivery_get_locked(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
    ) -> Result<Option<Delivery>, StoreError> {
        let row = self
            .sql
            .delivery_admin
            .get_locked
            .query_opt(tx, delivery_admin::GetLocked { id: id.into() })
            .await?;
        row.as_ref().map(rows::delivery).transpose()
    }

    async fn delivery_retry(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self
            .sql
            .delivery_admin
            .retry
            .execute(tx, delivery_admin::Retry { id: id.into(), now })
            .await?
            == 1)
    }

    async fn delivery_discard(
        &self,
        tx: &mut dyn Transaction,
        id: &str,
        now: DateTime<Utc>,
        why: &str,
    ) -> Result<bool, StoreError> {
        let params = delivery_admin::Discard { id: id.into(), now, why: why.into() };
        Ok(self.sql.delivery_admin.discard.execute(tx, params).await? == 1)
    }
}
