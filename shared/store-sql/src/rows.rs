//! Rows read the same way on both dialects, shared by several roles.

use chrono::{DateTime, Utc};
use jadpo_core::model::delivery::{Delivery, DeliveryStatus, Held};
use jadpo_core::model::encoding::Kept;
use jadpo_core::model::event::Event;
use jadpo_core::{Row, SqlValue, StoreError};
use jadpo_schema::migrate::{AppliedMigration, Ledger};
use jadpo_schema::placement::parse_features;

crate::columns! {
    /// A delivery joined with its outbox row: both adapters select these columns
    /// (`PipelineSql::delivery_get`, `DeliveryAdminSql::get_locked`, `PipelineSql::deliveries_list`).
    struct DeliveryColumns {
        id: String,
        subscriber: String,
        status: String,
        attempts: u32,
        next_attempt_at: DateTime<Utc>,
        enqueued_at: Option<DateTime<Utc>>,
        last_attempt_at: Option<DateTime<Utc>>,
        last_failure: Option<String>,
        finished_at: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
        outbox_id: String,
        event_type: String,
        payload: SqlValue,
        chain_depth: u32,
        event_created_at: DateTime<Utc>,
        payload_encoding: Option<i64>,
        traceparent: Option<String>,
        tracestate: Option<String>,
        held_connection: Option<String>,
        held_at: Option<DateTime<Utc>>,
    }
}

/// A delivery from its row ([`DeliveryColumns`]).
pub(crate) fn delivery(row: &Row) -> Result<Delivery, StoreError> {
    let c = DeliveryColumns::read(row)?;
    // A payload kept in a form this build does not read fails this delivery only.
    let unreadable = Kept::OutboxPayload.read(c.payload_encoding).err().map(|e| e.to_string());
    let status = DeliveryStatus::parse(&c.status)
        .ok_or_else(|| StoreError::internal(format!("unknown delivery status {:?}", c.status)))?;
    Ok(Delivery {
        id: c.id,
        subscriber: c.subscriber,
        status,
        attempts: c.attempts,
        next_attempt_at: c.next_attempt_at,
        enqueued_at: c.enqueued_at,
        last_attempt_at: c.last_attempt_at,
        last_failure: c.last_failure,
        finished_at: c.finished_at,
        created_at: c.created_at,
        event: Event {
            id: c.outbox_id,
            event_type: c.event_type,
            payload: match (&unreadable, c.payload) {
                (Some(_), _) => serde_json::Value::Null,
                (None, SqlValue::Json(document)) => document,
                (None, stored) => stored.json("payload")?,
            },
            chain_depth: c.chain_depth,
            created_at: c.event_created_at,
        },
        traceparent: c.traceparent,
        tracestate: c.tracestate,
        held: match (c.held_connection, c.held_at) {
            (Some(connection), Some(since)) => Some(Held { connection, since }),
            _ => None,
        },
        unreadable,
    })
}

crate::columns! {
    /// A row's `id`.
    struct Id { id: String }
    /// A row's `run_id`.
    struct RunId { run_id: String }
    /// A count, `n`.
    struct Count { n: u64 }
}

/// The count `n` of the first of `rows` (an aggregate's one row), 0 when there is none.
pub(crate) fn first_count(rows: &[Row]) -> Result<u64, StoreError> {
    Ok(rows.first().map(Count::read).transpose()?.map_or(0, |c| c.n))
}

/// Reads a migration ledger row with the columns `version`, `applied_at` and `checksum`, and
/// `features` where the ledger has it (the adapters select those names in both dialects).
pub fn applied_migration(ledger: Ledger, row: &Row) -> Result<AppliedMigration, StoreError> {
    let version = u32::try_from(row.get_i64("version")?)
        .map_err(|_| StoreError::internal("a ledger version is out of range"))?;
    let features = match row.columns().iter().any(|c| c == "features") {
        true => row.get_opt_str("features")?,
        false => None,
    };
    let features = features
        .map(|text| {
            parse_features(text).ok_or_else(|| {
                StoreError::invalid(format!(
                    "{ledger} migration {version} ran for features {text:?}, some unknown to \
                     this build: a newer build applied it"
                ))
            })
        })
        .transpose()?;
    Ok(AppliedMigration {
        ledger,
        version,
        checksum: row.get_opt_str("checksum")?.map(str::to_owned),
        applied_at: row.get_timestamp("applied_at")?,
        features,
    })
}
