//! Webhook receipt statements: `jadpo_webhook_receipts`. A claim racing another of the same key
//! waits on the key's unique index until the other commits, then does nothing.

use jadpo_store_sql::tables::webhooks;
use jadpo_store_sql::{WebhookSql, sql};

/// The webhook receipt statements.
pub(crate) static WEBHOOKS: WebhookSql = WebhookSql {
    claim: sql!(
        webhooks::Claim,
        "INSERT INTO jadpo_webhook_receipts (id, source, event_key, action, request_id, \
        received_at, signed_at, headers, body) VALUES ($id, $source, $event_key, $action, \
        $request_id, $received_at, $signed_at, $headers, $body) \
        ON CONFLICT (source, event_key) DO NOTHING RETURNING id",
    ),
    expire: sql!(
        webhooks::Expire,
        "DELETE FROM jadpo_webhook_receipts WHERE (source, event_key) IN (SELECT source, \
        event_key FROM jadpo_webhook_receipts WHERE source = $source AND received_at < $cutoff \
        ORDER BY received_at LIMIT $limit)",
    ),
    get: sql!(
        webhooks::Get,
        "SELECT id, source, event_key, action, request_id, received_at, signed_at, headers, body \
        FROM jadpo_webhook_receipts WHERE source = $source AND event_key = $event_key",
    ),
};
