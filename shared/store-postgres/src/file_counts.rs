//! File-count statements (PostgreSQL): `jadpo_files`, and each declared file column's trigger.
//! The trigger function `jadpo_files_count` comes with jadpo migration 19; each column gets one
//! row-level trigger calling it with the column's name. Identifiers come from the application's
//! declaration, checked at start to be plain lower-case identifiers, and are quoted here as well.

use jadpo_core::model::file_field::FileField;
use jadpo_store_sql::sql;
use jadpo_store_sql::tables::files;
use jadpo_store_sql::{FileSql, FileStatements};

const ROW: &str = "SELECT file_id, refs, state, unheld_since, updated_at, uploader, name, \
    content_type, size, sha256 FROM jadpo_files";

/// The static file-count statements.
pub(crate) static FILES: FileSql = FileSql {
    // The quota's sums are cast to bigint: PostgreSQL sums bigints as numeric.
    register: sql!(
        files::Register,
        "INSERT INTO jadpo_files (file_id, refs, state, updated_at, uploader, name, content_type, \
        size, sha256) SELECT $file_id, 0, 'live', $now, $uploader, $name, $content_type, $size, $sha256 \
        WHERE (SELECT count(*) < $max_files::bigint AND coalesce(sum(size), 0)::bigint + $size::bigint \
        <= $max_bytes::bigint FROM jadpo_files WHERE uploader = $uploader AND state = 'live') \
        ON CONFLICT (file_id) DO NOTHING",
    ),
    usage: sql!(
        files::Usage,
        "SELECT count(*) AS files, coalesce(sum(size), 0)::bigint AS bytes FROM jadpo_files \
        WHERE uploader = $uploader AND state = 'live'",
    ),
    get: sql!(files::Get, const_format::concatcp!(ROW, " WHERE file_id = $file_id")),
    mark_unheld: sql!(
        files::MarkUnheld,
        "UPDATE jadpo_files SET unheld_since = $now WHERE file_id IN ( \
        SELECT file_id FROM jadpo_files WHERE refs = 0 AND state = 'live' \
        AND unheld_since IS NULL LIMIT $limit FOR UPDATE SKIP LOCKED) \
        AND refs = 0 AND state = 'live' AND unheld_since IS NULL",
    ),
    // The outer conditions are checked again on the row as it stands once locked, so a file a
    // writer referenced meanwhile is not claimed.
    claim: sql!(
        files::Claim,
        "UPDATE jadpo_files SET state = 'deleting', updated_at = $now WHERE file_id IN ( \
        SELECT file_id FROM jadpo_files WHERE refs = 0 AND state = 'live' \
        AND unheld_since < $cutoff LIMIT $limit FOR UPDATE SKIP LOCKED) \
        AND refs = 0 AND state = 'live' AND unheld_since < $cutoff RETURNING file_id",
    ),
    deleting: sql!(
        files::Deleting,
        "SELECT file_id FROM jadpo_files WHERE state = 'deleting' ORDER BY file_id LIMIT $limit",
    ),
    mark_deleted: sql!(
        files::MarkDeleted,
        "UPDATE jadpo_files SET state = 'deleted', updated_at = $now \
        WHERE file_id = $file_id AND state = 'deleting'",
    ),
    claim_orphan: sql!(
        files::ClaimOrphan,
        "INSERT INTO jadpo_files (file_id, refs, state, updated_at) VALUES ($file_id, 0, 'deleting', $now) \
        ON CONFLICT (file_id) DO NOTHING",
    ),
    drop_tombstones: sql!(
        files::DropTombstones,
        "DELETE FROM jadpo_files WHERE file_id IN ( \
        SELECT file_id FROM jadpo_files WHERE state = 'deleted' AND updated_at < $cutoff \
        LIMIT $limit FOR UPDATE SKIP LOCKED) AND state = 'deleted'",
    ),
};

/// The statements generated per declared file field.
pub(crate) const GENERATED: FileStatements =
    FileStatements { lock, trigger_count, trigger_ddl, count_existing, holders };

fn trigger_name(field: &FileField) -> String {
    format!("jadpo_files_{}", field.column)
}

fn lock(field: &FileField) -> Option<String> {
    Some(format!("LOCK TABLE \"{}\" IN SHARE ROW EXCLUSIVE MODE", field.table))
}

fn trigger_count(field: &FileField) -> String {
    format!(
        "SELECT COUNT(*) AS n FROM pg_trigger WHERE tgrelid = to_regclass('\"{}\"') \
         AND tgname = '{}'",
        field.table,
        trigger_name(field)
    )
}

fn trigger_ddl(field: &FileField) -> Vec<String> {
    vec![format!(
        "CREATE OR REPLACE TRIGGER \"{}\" AFTER INSERT OR UPDATE OR DELETE ON \"{}\" \
         FOR EACH ROW EXECUTE FUNCTION jadpo_files_count('{}')",
        trigger_name(field),
        field.table,
        field.column
    )]
}

fn holders(field: &FileField) -> String {
    let owner = field.owner_column.as_ref().map_or("NULL".to_owned(), |o| format!("\"{o}\""));
    format!(
        "SELECT \"{c}\"::text AS file, ({owner})::text AS owner FROM \"{t}\" \
         WHERE \"{c}\" ->> 'id' = $1 LIMIT 100",
        c = field.column,
        t = field.table
    )
}

fn count_existing(field: &FileField) -> String {
    format!(
        "INSERT INTO jadpo_files AS f (file_id, refs, state) \
         SELECT \"{c}\" ->> 'id', COUNT(*), 'live' FROM \"{t}\" WHERE \"{c}\" ->> 'id' IS NOT NULL \
         GROUP BY 1 ON CONFLICT (file_id) DO UPDATE SET refs = f.refs + EXCLUDED.refs, \
         unheld_since = NULL",
        c = field.column,
        t = field.table
    )
}
