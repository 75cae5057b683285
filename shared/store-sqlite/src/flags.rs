//! Feature-flag statements (SQLite): `jadpo_flags` and `jadpo_flag_changes`.

use jadpo_store_sql::{FlagSql, Statement};

const FLAG: &str = "SELECT name, mode, percentage, updated_at, updated_by FROM jadpo_flags";

/// The flag statements.
pub(crate) static FLAGS: FlagSql = FlagSql {
    get: Statement::new(const_format::concatcp!(FLAG, " WHERE name = $1")),
    list: Statement::new(const_format::concatcp!(FLAG, " ORDER BY name")),
    upsert: Statement::new(
        "INSERT INTO jadpo_flags (name, mode, percentage, updated_at, updated_by) \
        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET mode = excluded.mode, \
        percentage = excluded.percentage, updated_at = excluded.updated_at, \
        updated_by = excluded.updated_by",
    ),
    change_insert: Statement::new(
        "INSERT INTO jadpo_flag_changes (id, flag, changed_at, before, after, \
        operator, db_role, os_account) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    ),
    changes: Statement::new(
        "SELECT id, flag, changed_at, before, after, operator, db_role, os_account \
        FROM jadpo_flag_changes WHERE flag = $1 ORDER BY changed_at DESC, id DESC LIMIT $2",
    ),
};
