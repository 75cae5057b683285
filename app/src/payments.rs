//! Payments: the `pay_order` action and the `take_payment` subscriber, which makes two changing
//! calls — charge the `payments` provider, then mail the receipt through `mailer` — before its
//! one write. The runtime records each call as a step: a retried delivery replays the answered
//! calls instead of charging or mailing again, and each call carries its own idempotency key.

use async_trait::async_trait;
use jadpo_application::{Action, ActionOutput, Event, HandlerContext, HandlerError, Subscriber};
use jadpo_core::model::principal::Principal;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PayInput {
    order_id: String,
    /// In cents, at least 1.
    amount: i64,
}

fn invalid(detail: impl Into<String>) -> HandlerError {
    HandlerError::rejected(422, "Invalid payment", detail)
}

/// `pay_order` (`{"order_id": "…", "amount": 1250}`): asks for the order to be paid, emitting
/// `order.payment_requested`. A signed-in customer pays only their own orders; a service any.
#[derive(Debug, Clone, Copy)]
pub struct PayOrder;

#[async_trait]
impl Action for PayOrder {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let pay: PayInput = serde_json::from_value(input).map_err(|e| invalid(e.to_string()))?;
        if pay.amount < 1 {
            return Err(invalid("amount is in cents and at least 1"));
        }
        let owner = match ctx.principal() {
            Some(Principal::User(id)) => Some(id.clone()),
            _ => None,
        };
        let found = ctx
            .tx()
            .await?
            .query_opt(
                "SELECT customer FROM shop_orders WHERE id = $1",
                &[pay.order_id.as_str().into()],
            )
            .await?;
        let customer = match found {
            Some(row) => row.get_str("customer")?.to_owned(),
            None => return Err(not_found(&pay.order_id)),
        };
        if owner.as_ref().is_some_and(|me| *me != customer) {
            // Another customer's order is not shown to exist.
            return Err(not_found(&pay.order_id));
        }
        ctx.emit(
            "order.payment_requested",
            json!({"order_id": pay.order_id, "amount": pay.amount, "customer": customer}),
        );
        Ok(ActionOutput::ok(json!({"order_id": pay.order_id, "payment": "requested"})))
    }
}

/// An order that does not exist, or that is not the caller's: the same answer.
pub(crate) fn not_found(order_id: &str) -> HandlerError {
    HandlerError::rejected(404, "No such order", format!("no order {order_id:?}"))
}

/// `take_payment`: charges the order through `payments`, mails a receipt naming the charge
/// through `mailer`, then records the payment. Both calls are changing calls made before the
/// write, so no transaction is open while a provider answers.
#[derive(Debug, Clone, Copy)]
pub struct TakePayment;

#[async_trait]
impl Subscriber for TakePayment {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let order_id = event.payload["order_id"].as_str().unwrap_or_default().to_owned();
        let amount = event.payload["amount"].as_i64().unwrap_or_default();
        let charge = json!({"order_id": order_id, "amount": amount});
        let charged = ctx.call("payments", "/charges", charge).await?;
        let charge_id = answer_id(&charged, "charge")?;
        let receipt = json!({
            "to": event.payload["customer"],
            "subject": "Payment received",
            "order_id": order_id,
            "charge_id": charge_id,
        });
        let mailed = ctx.call("mailer", "/receipts", receipt).await?;
        let receipt_id = answer_id(&mailed, "receipt")?;
        let now = ctx.now();
        ctx.tx()
            .await?
            .execute(
                "INSERT INTO shop_payments (order_id, amount, charge_id, receipt_id, paid_at) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    order_id.as_str().into(),
                    amount.into(),
                    charge_id.as_str().into(),
                    receipt_id.as_str().into(),
                    now.into(),
                ],
            )
            .await?;
        Ok(())
    }
}

/// The `id` a provider answered with.
fn answer_id(answer: &Value, what: &str) -> Result<String, HandlerError> {
    answer["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| HandlerError::Failed(format!("the {what} answer has no id: {answer}")))
}
