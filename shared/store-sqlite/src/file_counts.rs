//! File-count statements (SQLite): `jadpo_files`, and each declared file column's triggers.
//! SQLite triggers must name their columns, so each file column gets three triggers (insert,
//! update of the column, delete) generated from the declaration, finding the file's id with
//! `json_extract`. Identifiers come from the application's declaration, checked at start to be
//! plain lower-case identifiers, and are quoted here as well. A transaction here writes alone
//! (`BEGIN IMMEDIATE`), so installing a trigger and counting the rows needs no lock of its own.

use jadpo_core::model::file_field::FileField;
use jadpo_store_sql::sql;
use jadpo_store_sql::tables::files;
use jadpo_store_sql::{FileSql, FileStatements};

const ROW: &str = "SELECT file_id, refs, state, unheld_since, updated_at, uploader, name, \
    content_type, size, sha256 FROM jadpo_files";

/// The static file-count statements.
pub(crate) static FILES: FileSql = FileSql {
    register: sql!(
        files::Register,
        "INSERT INTO jadpo_files (file_id, refs, state, updated_at, uploader, name, content_type, \
        size, sha256) SELECT $file_id, 0, 'live', $now, $uploader, $name, $content_type, $size, $sha256 \
        WHERE (SELECT count(*) < $max_files AND coalesce(sum(size), 0) + $size <= $max_bytes \
        FROM jadpo_files WHERE uploader = $uploader AND state = 'live') \
        ON CONFLICT (file_id) DO NOTHING",
    ),
    usage: sql!(
        files::Usage,
        "SELECT count(*) AS files, coalesce(sum(size), 0) AS bytes FROM jadpo_files \
        WHERE uploader = $uploader AND state = 'live'",
    ),
    get: sql!(files::Get, const_format::concatcp!(ROW, " WHERE file_id = $file_id")),
    mark_unheld: sql!(
        files::MarkUnheld,
        "UPDATE jadpo_files SET unheld_since = $now WHERE file_id IN ( \
        SELECT file_id FROM jadpo_files WHERE refs = 0 AND state = 'live' \
        AND unheld_since IS NULL LIMIT $limit)",
    ),
    claim: sql!(
        files::Claim,
        "UPDATE jadpo_files SET state = 'deleting', updated_at = $now WHERE file_id IN ( \
        SELECT file_id FROM jadpo_files WHERE refs = 0 AND state = 'live' \
        AND unheld_since < $cutoff LIMIT $limit) RETURNING file_id",
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
        SELECT file_id FROM jadpo_files WHERE state = 'deleted' AND updated_at < $cutoff LIMIT $limit)",
    ),
};

/// The statements generated per declared file field.
pub(crate) const GENERATED: FileStatements =
    FileStatements { lock, trigger_count, trigger_ddl, count_existing, holders };

/// What a trigger says when a row names a file whose bytes are being or were deleted (SQLite's
/// `RAISE` takes a literal only, so the id is not in it).
const DELETED: &str =
    "a file this row names was deleted (no record held it for the grace period): upload it again";

fn name(field: &FileField, kind: &str) -> String {
    format!("jadpo_files_{}_{}_{kind}", field.table, field.column)
}

fn lock(_: &FileField) -> Option<String> {
    None
}

fn trigger_count(field: &FileField) -> String {
    format!(
        "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'trigger' AND name IN ('{}', '{}', \
         '{}')",
        name(field, "insert"),
        name(field, "update"),
        name(field, "delete")
    )
}

fn id(side: &str, column: &str) -> String {
    format!("json_extract({side}.\"{column}\", '$.id')")
}

/// The statements adding one reference to the file `side` names (none if it names none).
fn gain(side: &str, column: &str) -> String {
    let id = id(side, column);
    format!(
        "SELECT RAISE(ABORT, '{DELETED}') FROM jadpo_files WHERE file_id = {id} \
         AND state <> 'live'; \
         INSERT INTO jadpo_files (file_id, refs, state) SELECT {id}, 1, 'live' \
         WHERE {id} IS NOT NULL ON CONFLICT (file_id) DO UPDATE SET refs = refs + 1, \
         unheld_since = NULL;"
    )
}

/// The statement taking one reference from the file `side` names.
fn lose(side: &str, column: &str) -> String {
    format!(
        "UPDATE jadpo_files SET refs = refs - 1 WHERE file_id = {} AND refs > 0;",
        id(side, column)
    )
}

fn trigger_ddl(field: &FileField) -> Vec<String> {
    let (t, c) = (&field.table, &field.column);
    let mut out = Vec::new();
    for kind in ["insert", "update", "delete"] {
        out.push(format!("DROP TRIGGER IF EXISTS \"{}\"", name(field, kind)));
    }
    out.push(format!(
        "CREATE TRIGGER \"{}\" AFTER INSERT ON \"{t}\" WHEN {} IS NOT NULL BEGIN {} END",
        name(field, "insert"),
        id("NEW", c),
        gain("NEW", c)
    ));
    out.push(format!(
        "CREATE TRIGGER \"{}\" AFTER UPDATE OF \"{c}\" ON \"{t}\" WHEN {} IS NOT {} BEGIN {} {} END",
        name(field, "update"),
        id("OLD", c),
        id("NEW", c),
        gain("NEW", c),
        lose("OLD", c)
    ));
    out.push(format!(
        "CREATE TRIGGER \"{}\" AFTER DELETE ON \"{t}\" WHEN {} IS NOT NULL BEGIN {} END",
        name(field, "delete"),
        id("OLD", c),
        lose("OLD", c)
    ));
    out
}

fn holders(field: &FileField) -> String {
    let owner = field.owner_column.as_ref().map_or("NULL".to_owned(), |o| format!("\"{o}\""));
    format!(
        "SELECT \"{c}\" AS file, CAST({owner} AS TEXT) AS owner FROM \"{t}\" \
         WHERE json_extract(\"{c}\", '$.id') = $1 LIMIT 100",
        c = field.column,
        t = field.table
    )
}

fn count_existing(field: &FileField) -> String {
    format!(
        "INSERT INTO jadpo_files (file_id, refs, state) \
         SELECT json_extract(\"{c}\", '$.id'), COUNT(*), 'live' FROM \"{t}\" \
         WHERE json_extract(\"{c}\", '$.id') IS NOT NULL GROUP BY 1 \
         ON CONFLICT (file_id) DO UPDATE SET refs = refs + excluded.refs, unheld_since = NULL",
        c = field.column,
        t = field.table
    )
}
