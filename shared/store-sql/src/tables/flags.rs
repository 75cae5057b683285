//! `FlagSql`: the slots of the flags role's statements, each with its parameters.

use crate::statements;

statements! {
    /// One dialect's statements for `jadpo_flags` and `jadpo_flag_changes`.
    pub struct FlagSql {
        /// Returns `name, mode, percentage, updated_at, updated_by`.
        get(name),
        /// Returns every stored flag, by name.
        list(),
        /// Insert or replace.
        upsert(name, mode, percentage, now, who),
        /// One change to a flag, for its history.
        change_insert(id, flag, changed_at, before, after, operator, db_role, os_account),
        /// Returns changes, newest first.
        changes(flag, limit),
    }
}
