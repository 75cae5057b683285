//! The audit trail: every insert, update and delete of a declared entity's records is written to
//! `jadpo_audit` by a database trigger, in the same transaction as the change.
//!
//! Why triggers: an action writes its rows with its own SQL through the transaction, so a
//! runtime that wrote audit rows itself would only see what it was told; a trigger sees every
//! change to the table, whoever makes it and however. The runtime only tells the database who is
//! acting: when it opens an action's or subscriber's transaction on a store holding an audited
//! entity it sets the context (actor, action, request, trace, time) — transaction-local settings
//! on PostgreSQL, a one-row table on SQLite (cleared before commit; SQLite's single writer makes
//! the row the writing transaction's). A change made outside the runtime is still recorded, as
//! such. Rows are only ever added; housekeeping deletes them when the entity's retention ends,
//! and erasure (`jadpo-engine`) deletes them with their record.
//!
//! Each row: the entity's born name (the name it was declared with, kept if the table is
//! renamed), the record's `id`, its place among the record's changes (`seq`), when, the kind of
//! change, who made it, through which action, request and trace, and each changed field before
//! and after as text, with the encoding it was written in
//! ([`AUDIT_TEXT`](crate::model::encoding::AUDIT_TEXT) on both databases; `NULL`, the legacy form,
//! reads the same).

use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// An audited entity, as the application declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSpec {
    /// The entity's born name.
    pub entity: String,
    /// The store its table lives in.
    pub store: String,
    /// Its table (with an `id` column).
    pub table: String,
    /// The columns whose changes are recorded.
    pub columns: Vec<String>,
    /// How long its audit rows are kept.
    pub retention: Duration,
}

impl AuditSpec {
    /// Audits `table` in `store` as entity `entity`, recording `columns`; rows are kept 365 days
    /// unless [`retention`](Self::retention) says otherwise.
    pub fn new(entity: &str, store: &str, table: &str, columns: &[&str]) -> Self {
        Self {
            entity: entity.to_owned(),
            store: store.to_owned(),
            table: table.to_owned(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            retention: Duration::from_secs(365 * 24 * 3600),
        }
    }

    /// How long audit rows are kept.
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }
}

/// Who is acting in a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditContext<'a> {
    /// Who (the calling service, or `subscriber:<name>`).
    pub actor: &'a str,
    /// Through which action or subscriber.
    pub action: &'a str,
    /// The request id or delivery id.
    pub request_id: Option<&'a str>,
    /// The W3C `traceparent`.
    pub trace: Option<&'a str>,
    /// The runtime's time.
    pub now: DateTime<Utc>,
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// The entity's born name.
    pub entity: String,
    pub record_id: String,
    /// Its place among the record's changes (from 1).
    pub seq: i64,
    /// When.
    pub changed_at: DateTime<Utc>,
    /// `insert`, `update` or `delete`.
    pub kind: String,
    /// Who, as the runtime said (the principal, or an operator).
    pub actor: String,
    /// The database role whose session made the change (PostgreSQL's `session_user`, which no
    /// statement of that session can change); `None` on SQLite, which has no roles, and on rows
    /// written before it was recorded.
    pub db_role: Option<String>,
    /// Through which action.
    pub action: Option<String>,
    /// Which request.
    pub request_id: Option<String>,
    /// Which trace.
    pub trace: Option<String>,
    /// Each changed field: `{"field": {"before": text|null, "after": text|null}}` (`null` when
    /// the row is unreadable).
    pub changes: Value,
    /// How the values were written (`None`: before encodings were recorded).
    pub encoding: Option<i64>,
    /// Why this row cannot be read: its encoding is one this build does not read.
    pub unreadable: Option<String>,
}

/// A record's fields as text (in its store's encoding); `None` for SQL NULL.
pub type Fields = BTreeMap<String, Option<String>>;

/// Replays `rows` (one record's changes, by `seq`) to the record's fields now; `None` when its
/// last change deleted it. A row this build cannot read stops it, named.
pub fn replay(rows: &[AuditRow]) -> Result<Option<Fields>, String> {
    let mut state: Option<Fields> = None;
    for row in rows {
        if let Some(why) = &row.unreadable {
            return Err(format!("audit row {} cannot be read: {why}", row.seq));
        }
        if row.kind == "delete" {
            state = None;
            continue;
        }
        let fields = state.get_or_insert_with(Fields::new);
        if let Value::Object(changes) = &row.changes {
            for (field, change) in changes {
                fields.insert(field.clone(), change["after"].as_str().map(str::to_owned));
            }
        }
    }
    Ok(state)
}

#[cfg(test)]
mod tests;
