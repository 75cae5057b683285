//! Rows read the same way on both dialects, decoded by column name, shared by several roles.

use jadpo_core::model::delivery::{Delivery, DeliveryStatus, Held};
use jadpo_core::model::encoding::Kept;
use jadpo_core::model::event::Event;
use jadpo_core::{Row, StoreError};

/// A delivery joined with its outbox row: both adapters select the same column names
/// (`PipelineSql::delivery_get`, `DeliveryAdminSql::get_locked`, `PipelineSql::deliveries_list`).
pub(crate) fn delivery(row: &Row) -> Result<Delivery, StoreError> {
    let status = row.get_str("status")?;
    let count = |column: &str| -> Result<u32, StoreError> {
        u32::try_from(row.get_i64(column)?)
            .map_err(|_| StoreError::internal(format!("{column} out of range")))
    };
    // A payload kept in a form this build does not read fails this delivery only.
    let unreadable =
        Kept::OutboxPayload.read(row.get_opt_i64("payload_encoding")?).err().map(|e| e.to_string());
    Ok(Delivery {
        id: row.get_str("id")?.to_owned(),
        subscriber: row.get_str("subscriber")?.to_owned(),
        status: DeliveryStatus::parse(status)
            .ok_or_else(|| StoreError::internal(format!("unknown delivery status {status:?}")))?,
        attempts: count("attempts")?,
        next_attempt_at: row.get_timestamp("next_attempt_at")?,
        enqueued_at: row.get_opt_timestamp("enqueued_at")?,
        last_attempt_at: row.get_opt_timestamp("last_attempt_at")?,
        last_failure: row.get_opt_str("last_failure")?.map(str::to_owned),
        finished_at: row.get_opt_timestamp("finished_at")?,
        created_at: row.get_timestamp("created_at")?,
        event: Event {
            id: row.get_str("outbox_id")?.to_owned(),
            event_type: row.get_str("event_type")?.to_owned(),
            payload: match &unreadable {
                None => row.get_json("payload")?,
                Some(_) => serde_json::Value::Null,
            },
            chain_depth: count("chain_depth")?,
            created_at: row.get_timestamp("event_created_at")?,
        },
        traceparent: row.get_opt_str("traceparent")?.map(str::to_owned),
        tracestate: row.get_opt_str("tracestate")?.map(str::to_owned),
        held: match (row.get_opt_str("held_connection")?, row.get_opt_timestamp("held_at")?) {
            (Some(connection), Some(since)) => {
                Some(Held { connection: connection.to_owned(), since })
            }
            _ => None,
        },
        unreadable,
    })
}
