//! Orders: the `place_order` action and the `reserve_stock` subscriber.

use async_trait::async_trait;
use jadpo_application::{Action, ActionOutput, Event, HandlerContext, HandlerError, Subscriber};
use jadpo_core::SqlValue;
use jadpo_core::model::principal::Principal;
use serde::Deserialize;
use serde_json::{Value, json};

/// One line of an order.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
pub(crate) struct Item {
    /// Stock-keeping unit.
    pub sku: String,
    /// Quantity, at least 1.
    pub qty: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OrderInput {
    customer: Option<String>,
    items: Vec<Item>,
}

/// An order ready to write: whose, and what.
#[derive(Debug)]
struct Order {
    customer: String,
    items: Vec<Item>,
}

fn invalid(detail: impl Into<String>) -> HandlerError {
    HandlerError::rejected(422, "Invalid order", detail)
}

/// The order in `input`, for `principal`: a signed-in customer's own (the body names no
/// customer), or the customer a service names.
fn parse(input: Value, principal: Option<&Principal>) -> Result<Order, HandlerError> {
    let order: OrderInput = serde_json::from_value(input).map_err(|e| invalid(e.to_string()))?;
    let customer = match (principal, order.customer) {
        (Some(Principal::User(id)), None) => id.clone(),
        (Some(Principal::User(_)), Some(_)) => {
            return Err(invalid("a signed-in customer orders for themself: leave out customer"));
        }
        (_, Some(customer)) => customer,
        (_, None) => return Err(invalid("missing field `customer`: name the customer")),
    };
    if customer.trim().is_empty() {
        return Err(invalid("customer must not be empty"));
    }
    let order = Order { customer, items: order.items };
    if order.items.is_empty() {
        return Err(invalid("an order has at least one item"));
    }
    if let Some(bad) = order.items.iter().find(|i| i.sku.trim().is_empty() || i.qty < 1) {
        return Err(invalid(format!("item {:?} needs a sku and a qty of at least 1", bad.sku)));
    }
    Ok(order)
}

/// `place_order`: writes the order and emits `order.placed` with its id.
#[derive(Debug, Clone, Copy)]
pub struct PlaceOrder;

#[async_trait]
impl Action for PlaceOrder {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let order = parse(input, ctx.principal())?;
        let id = ctx.new_id();
        let items = json!(order.items);
        let now = ctx.now();
        let tx = ctx.tx().await?;
        // A JSON value binds on either adapter (JSONB on PostgreSQL, its text on SQLite).
        let items_value = SqlValue::Json(items.clone());
        tx.execute(
            "INSERT INTO shop_orders (id, customer, items, created_at) VALUES ($1, $2, $3, $4)",
            &[id.as_str().into(), order.customer.as_str().into(), items_value, now.into()],
        )
        .await?;
        ctx.emit(
            "order.placed",
            json!({"order_id": id, "customer": order.customer, "items": items}),
        );
        Ok(ActionOutput::created(json!({"order_id": id})))
    }
}

/// `reserve_stock`: one reservation per item, in the warehouse store.
#[derive(Debug, Clone, Copy)]
pub struct ReserveStock;

#[async_trait]
impl Subscriber for ReserveStock {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let order_id = event.payload["order_id"]
            .as_str()
            .ok_or_else(|| {
                HandlerError::rejected(422, "Bad event", "order.placed without order_id")
            })?
            .to_owned();
        let items: Vec<Item> = serde_json::from_value(event.payload["items"].clone())
            .map_err(|e| HandlerError::rejected(422, "Bad event", e.to_string()))?;
        let now = ctx.now();
        for item in items {
            ctx.tx()
                .await?
                .execute(
                    "INSERT INTO shop_reservations (order_id, sku, qty, reserved_at) VALUES ($1, $2, $3, $4)",
                    &[order_id.as_str().into(), item.sku.into(), item.qty.into(), now.into()],
                )
                .await?;
        }
        Ok(())
    }
}

/// `send_receipt`: mails the customer through the `mailer` connection, with a survey link for
/// the customers the `receipt_survey` flag selects. The delivery id goes
/// along as the `Idempotency-Key`, so a redelivered event does not mail twice at a mailer that
/// deduplicates.
#[derive(Debug, Clone, Copy)]
pub struct SendReceipt;

#[async_trait]
impl Subscriber for SendReceipt {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_>,
        event: &Event,
    ) -> Result<(), HandlerError> {
        let customer = event.payload["customer"].as_str().unwrap_or_default().to_owned();
        let survey = ctx.flag("receipt_survey", &customer).await?;
        let receipt = json!({
            "to": customer,
            "subject": "Your order",
            "order_id": event.payload["order_id"],
            "survey": survey,
        });
        ctx.call("mailer", "", receipt).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_in_customer_orders_for_themself_and_a_service_names_the_customer() {
        let alice = Principal::User("alice".into());
        let shop = Principal::Service("web".into());
        let items = json!([{"sku": "A", "qty": 1}]);
        let own = parse(json!({"items": items}), Some(&alice)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(own.customer, "alice");
        let other = parse(json!({"customer": "bob", "items": items}), Some(&alice));
        assert!(other.err().is_some_and(|e| e.to_string().contains("themself")));
        let named = parse(json!({"customer": "bob", "items": items}), Some(&shop));
        assert_eq!(named.map(|o| o.customer).ok().as_deref(), Some("bob"));
        let unnamed = parse(json!({"items": items}), Some(&shop));
        assert!(unnamed.err().is_some_and(|e| e.to_string().contains("name the customer")));
    }

    #[test]
    fn orders_are_validated() {
        assert!(parse(json!({"customer": "c1", "items": [{"sku": "A", "qty": 1}]}), None).is_ok());
        let err = |v: Value| parse(v, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            err(json!({"customer": "", "items": [{"sku": "A", "qty": 1}]})).contains("customer")
        );
        assert!(err(json!({"customer": "c", "items": []})).contains("at least one item"));
        assert!(
            err(json!({"customer": "c", "items": [{"sku": "A", "qty": 0}]}))
                .contains("qty of at least 1")
        );
        assert!(err(json!({"customer": "c"})).contains("missing field `items`"));
        assert!(err(json!({"items": [{"sku": "A", "qty": 1}]})).contains("name the customer"));
        assert!(err(json!({"customer": "c", "items": [], "x": 1})).contains("unknown field"));
    }
}
