//! Feature-flag statements (SQLite): `jadpo_flags` and `jadpo_flag_changes`.

use jadpo_store_sql::tables::flags;
use jadpo_store_sql::{FlagSql, sql};

const FLAG: &str = "SELECT name, mode, percentage, updated_at, updated_by FROM jadpo_flags";

/// The flag statements.
pub(crate) static FLAGS: FlagSql = FlagSql {
    get: sql!(flags::Get, const_format::concatcp!(FLAG, " WHERE name = $name")),
    list: sql!(flags::List, const_format::concatcp!(FLAG, " ORDER BY name")),
    upsert: sql!(
        flags::Upsert,
        "INSERT INTO jadpo_flags (name, mode, percentage, updated_at, updated_by) \
        VALUES ($name, $mode, $percentage, $now, $who) ON CONFLICT (name) DO UPDATE SET mode = excluded.mode, \
        percentage = excluded.percentage, updated_at = excluded.updated_at, \
        updated_by = excluded.updated_by",
    ),
    change_insert: sql!(
        flags::ChangeInsert,
        "INSERT INTO jadpo_flag_changes (id, flag, changed_at, before, after, \
        operator, db_role, os_account) VALUES ($id, $flag, $changed_at, $before, $after, $operator, $db_role, $os_account)",
    ),
    changes: sql!(
        flags::Changes,
        "SELECT id, flag, changed_at, before, after, operator, db_role, os_account \
        FROM jadpo_flag_changes WHERE flag = $flag ORDER BY changed_at DESC, id DESC LIMIT $limit",
    ),
};
