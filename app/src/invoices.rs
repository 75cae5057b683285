//! Invoices: a customer (or a service) uploads an order's invoice (`POST
//! /files/shop_orders/invoice?name=…`, a PDF of at most 2 MiB), then attaches the file the upload
//! answered to the order with the `attach_invoice` action. The runtime counts the order as
//! holding the file, serves it (`GET /files/{id}`) to the order's customer and to services, and
//! deletes the bytes a day after no order holds them.

use async_trait::async_trait;
use jadpo_application::{Action, ActionOutput, HandlerContext, HandlerError};
use jadpo_core::model::file::File;
use jadpo_core::model::principal::Principal;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::payments::not_found;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachInput {
    order_id: String,
    /// The file as `POST /files/shop_orders/invoice` answered it; `null` detaches.
    invoice: Option<Value>,
}

fn invalid(detail: impl Into<String>) -> HandlerError {
    HandlerError::rejected(422, "Invalid invoice", detail)
}

/// `attach_invoice` (`{"order_id": "…", "invoice": {…the uploaded file…}}`): the order's invoice,
/// replacing any earlier one (whose bytes go once no order holds them). A signed-in customer
/// attaches only to their own orders; a service to any. The file must be one the caller uploaded,
/// named and typed as it was uploaded, its bytes still kept (`HandlerContext::uploaded_file`).
#[derive(Debug, Clone, Copy)]
pub struct AttachInvoice;

#[async_trait]
impl Action for AttachInvoice {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        let input: AttachInput =
            serde_json::from_value(input).map_err(|e| invalid(e.to_string()))?;
        let me = match ctx.principal() {
            Some(Principal::User(id)) => Some(id.clone()),
            _ => None,
        };
        let tx = ctx.tx().await?;
        let sql = "SELECT customer FROM shop_orders WHERE id = $1";
        let found = tx.query_opt(sql, &[input.order_id.as_str().into()]).await?;
        let customer = match found {
            Some(row) => row.get_str("customer")?.to_owned(),
            None => return Err(not_found(&input.order_id)),
        };
        if me.as_ref().is_some_and(|me| *me != customer) {
            return Err(not_found(&input.order_id));
        }
        // Only a file this caller uploaded, as it was uploaded, still kept.
        let file = ctx.uploaded_file(input.invoice.as_ref().unwrap_or(&Value::Null)).await?;
        let tx = ctx.tx().await?;
        let column = file.as_ref().map_or(jadpo_core::SqlValue::Null, File::to_column);
        let sql = "UPDATE shop_orders SET invoice = $1 WHERE id = $2";
        tx.execute(sql, &[column, input.order_id.as_str().into()]).await?;
        let id = file.as_ref().map(|f| f.id().to_owned());
        Ok(ActionOutput::ok(json!({"order_id": input.order_id, "invoice": id})))
    }
}
