//! A webhook source for the tests of webhook receipts: `gh` (GitHub's scheme) and `sw` (Standard
//! Webhooks') feeding `record_payment`, which writes one `t_payments` row per event and emits
//! `payment.received`, or refuses an event whose body asks it to (`sw` takes a request a second,
//! two at once); and the signatures the providers would send.

use async_trait::async_trait;
use hmac::{Hmac, Mac};
use jadpo_application::{
    Action, ActionOutput, Application, HandlerContext, HandlerError, WebhookScheme, WebhookSource,
};
use jadpo_core::Dialect;
use jadpo_engine::services::webhooks::verify::{Secret, read_secrets};
use jadpo_schema::migrate::{Ledger, Migration};
use serde_json::{Value, json};
use sha2::Sha256;

/// `gh`'s secret.
pub const GH_SECRET: &str = "It's a Secret to Everybody";
/// `sw`'s secret: the key is the base64 after `whsec_`.
pub const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

const PAYMENTS: &str = "CREATE TABLE t_payments (receipt TEXT PRIMARY KEY, event_key TEXT NOT NULL, \
    amount INTEGER NOT NULL)";

struct RecordPayment;

#[async_trait]
impl Action for RecordPayment {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_>,
        input: Value,
    ) -> Result<ActionOutput, HandlerError> {
        if input["payload"]["reject"].as_bool() == Some(true) {
            return Err(HandlerError::rejected(422, "Refused", "this event is refused"));
        }
        let receipt = input["receipt"].as_str().unwrap_or_default().to_owned();
        let key = input["event_key"].as_str().unwrap_or_default().to_owned();
        let amount = input["payload"]["amount"].as_i64().unwrap_or(0);
        let sql = "INSERT INTO t_payments (receipt, event_key, amount) VALUES ($1, $2, $3)";
        let params = [receipt.as_str().into(), key.as_str().into(), amount.into()];
        ctx.tx().await?.execute(sql, &params).await?;
        ctx.emit("payment.received", json!({"receipt": receipt, "amount": amount}));
        Ok(ActionOutput::created(json!({"recorded": receipt})))
    }
}

/// The webhook tests' application.
pub fn webhook_app() -> Application {
    let migration = || vec![Migration::new(Ledger::Workflow, 5, "t", PAYMENTS)];
    Application::builder("hooks")
        .store("main")
        .event("payment.received")
        .action("record_payment", "main", RecordPayment)
        .webhook(WebhookSource::new("gh", WebhookScheme::GitHub, "record_payment"))
        .webhook(
            WebhookSource::new("sw", WebhookScheme::StandardWebhooks, "record_payment").rate(1, 2),
        )
        .migrations("main", Dialect::Sqlite, migration())
        .migrations("main", Dialect::Postgres, migration())
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Each source's secrets, as the runtime reads them.
pub fn webhook_secrets() -> std::collections::BTreeMap<String, Vec<Secret>> {
    let read = |scheme, text| read_secrets(&scheme, text).unwrap_or_else(|e| panic!("{e}"));
    [
        ("gh".to_owned(), read(WebhookScheme::GitHub, GH_SECRET)),
        ("sw".to_owned(), read(WebhookScheme::StandardWebhooks, SW_SECRET)),
    ]
    .into()
}

fn hmac(key: &[u8], content: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|e| panic!("{e}"));
    mac.update(content);
    mac.finalize().into_bytes().to_vec()
}

/// `X-Hub-Signature-256` for `body` under `secret`.
pub fn github_signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", data_encoding::HEXLOWER.encode(&hmac(secret.as_bytes(), body)))
}

/// The `webhook-*` headers of a Standard Webhooks request `id` signed at `timestamp` under `sw`'s
/// secret.
pub fn standard_headers(id: &str, timestamp: i64, body: &[u8]) -> Vec<(String, String)> {
    let key = data_encoding::BASE64
        .decode(SW_SECRET.trim_start_matches("whsec_").as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let content = [id.as_bytes(), b".", timestamp.to_string().as_bytes(), b".", body].concat();
    let signature = format!("v1,{}", data_encoding::BASE64.encode(&hmac(&key, &content)));
    vec![
        ("webhook-id".to_owned(), id.to_owned()),
        ("webhook-timestamp".to_owned(), timestamp.to_string()),
        ("webhook-signature".to_owned(), signature),
    ]
}
