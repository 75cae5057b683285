//! `AuditSql`: the slots of the audit role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's static audit statements.
    pub struct AuditSql {
        /// Who is acting in this transaction.
        set_context: SetContext(
            actor: String,
            action: String,
            request_id: Option<String>,
            trace: Option<String>,
            now: DateTime<Utc>,
        ),
        /// Forget it before commit, where it outlives the transaction otherwise.
        clear_context: ClearContext(): optional,
        /// Returns its rows by `seq`.
        rows: Rows(entity: String, record_id: String),
        /// Let this transaction delete audit rows (SQLite, whose triggers keep the trail
        /// append-only otherwise), just before erasure or retention deletes them.
        release: Release(): optional,
        /// Close the trail again, just after.
        unrelease: Unrelease(): optional,
        /// Delete every row about the record (erasure).
        delete_rows: DeleteRows(entity: String, record_id: String),
        /// Delete up to `limit` rows changed before `cutoff`.
        expire: Expire(entity: String, cutoff: DateTime<Utc>, limit: i64),
    }
}
