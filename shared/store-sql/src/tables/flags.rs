//! `FlagSql`: the slots of the flags role's statements, each with its parameters.

use chrono::{DateTime, Utc};

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_flags` and `jadpo_flag_changes`.
    pub struct FlagSql {
        /// Returns `name, mode, percentage, updated_at, updated_by`.
        get: Get(name: String),
        /// Returns every stored flag, by name.
        list: List(),
        /// Insert or replace.
        upsert: Upsert(
            name: String,
            mode: String,
            percentage: i64,
            now: DateTime<Utc>,
            who: String,
        ),
        /// One change to a flag, for its history.
        change_insert: ChangeInsert(
            id: String,
            flag: String,
            changed_at: DateTime<Utc>,
            before: String,
            after: String,
            operator: String,
            db_role: String,
            os_account: Option<String>,
        ),
        /// Returns changes, newest first.
        changes: Changes(flag: String, limit: i64),
    }
}
