//! Sales summaries: the `sales_summary` schedule emits `sales.summary_due` every minute, and the
//! `summarize_sales` subscriber counts the orders placed in the minute before the tick into
//! `shop_sales_summaries`, one row per run. Scheduled work is delivered like any event, so it is
//! retried, and its writes take effect once.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use jadpo_application::{Event, HandlerContext, HandlerError, Subscriber};

/// `summarize_sales`: one summary row per schedule run.
#[derive(Debug, Clone, Copy)]
pub struct SummarizeSales;

#[async_trait]
impl Subscriber for SummarizeSales {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let bad = |what: &str| {
            HandlerError::rejected(422, "Bad event", format!("sales.summary_due without {what}"))
        };
        let run_id = event.payload["run_id"].as_str().ok_or_else(|| bad("run_id"))?.to_owned();
        let tick_at: DateTime<Utc> = event.payload["tick_at"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .ok_or_else(|| bad("a tick_at time"))?;
        let since = tick_at - chrono::Duration::minutes(1);
        let now = ctx.now();
        let counted = ctx
            .tx()
            .await?
            .query_one(
                "SELECT COUNT(*) AS n FROM shop_orders WHERE created_at > $1 AND created_at <= $2",
                &[since.into(), tick_at.into()],
            )
            .await?;
        let orders = counted.get_i64("n")?;
        ctx.tx()
            .await?
            .execute(
                "INSERT INTO shop_sales_summaries (run_id, tick_at, orders, computed_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO NOTHING",
                &[run_id.as_str().into(), tick_at.into(), orders.into(), now.into()],
            )
            .await?;
        Ok(())
    }
}
