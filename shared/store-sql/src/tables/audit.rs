//! `AuditSql`: the slots of the audit role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's static audit statements.
    pub struct AuditSql {
        /// Who is acting in this transaction.
        set_context(actor, action, request_id, trace, now),
        /// Forget it before commit, where it outlives the transaction otherwise.
        clear_context(): optional,
        /// Returns its rows by `seq`.
        rows(entity, record_id),
        /// Let this transaction delete audit rows (SQLite, whose triggers keep the trail
        /// append-only otherwise), just before erasure or retention deletes them.
        release(): optional,
        /// Close the trail again, just after.
        unrelease(): optional,
        /// Delete every row about the record (erasure).
        delete_rows(entity, record_id),
        /// Delete up to `limit` rows changed before `cutoff`.
        expire(entity, cutoff, limit),
    }
}
