//! Audit statements (SQLite). SQLite triggers cannot read session settings and must name their
//! columns, so each audited table gets three triggers generated from the declaration, reading
//! who is acting from `jadpo_audit_context` (written by the runtime when it opens the
//! transaction, deleted before commit). Identifiers come from the application's declaration,
//! checked at start to be plain lower-case identifiers, and are quoted here as well. The trail
//! itself is append-only (migration 22's triggers): erasure and retention open it for their
//! delete through `jadpo_audit_release` and close it again in the same transaction.

use jadpo_core::model::audit::AuditSpec;
use jadpo_store_sql::sql;
use jadpo_store_sql::tables::audit;
use jadpo_store_sql::{AuditSql, AuditStatements};

/// The static audit statements.
pub(crate) static AUDIT: AuditSql = AuditSql {
    set_context: sql!(
        audit::SetContext,
        "INSERT OR REPLACE INTO jadpo_audit_context \
        (id, actor, action, request_id, trace, now) VALUES (1, $actor, $action, $request_id, $trace, $now)",
    ),
    clear_context: Some(sql!(audit::ClearContext, "DELETE FROM jadpo_audit_context")),
    release: Some(sql!(
        audit::Release,
        "INSERT OR REPLACE INTO jadpo_audit_release (id) VALUES (1)"
    )),
    unrelease: Some(sql!(audit::Unrelease, "DELETE FROM jadpo_audit_release")),
    rows: sql!(
        audit::Rows,
        "SELECT entity, record_id, seq, changed_at, kind, actor, db_role, action, request_id, \
        trace, changes, encoding FROM jadpo_audit WHERE entity = $entity AND record_id = $record_id ORDER BY seq",
    ),
    delete_rows: sql!(
        audit::DeleteRows,
        "DELETE FROM jadpo_audit WHERE entity = $entity AND record_id = $record_id"
    ),
    expire: sql!(
        audit::Expire,
        "DELETE FROM jadpo_audit WHERE (entity, record_id, seq) IN ( \
        SELECT entity, record_id, seq FROM jadpo_audit WHERE entity = $entity AND changed_at < $cutoff \
        LIMIT $limit) RETURNING seq",
    ),
};

const CONTEXT: &str = "(SELECT {} FROM jadpo_audit_context WHERE id = 1)";

fn context(column: &str) -> String {
    CONTEXT.replace("{}", column)
}

/// One trigger: `kind` is insert, update or delete.
fn trigger(spec: &AuditSpec, kind: &str) -> [String; 2] {
    let (old, new, row) = match kind {
        "insert" => (false, true, "NEW"),
        "update" => (true, true, "NEW"),
        _ => (true, false, "OLD"),
    };
    let value = |on: bool, side: &str, c: &str| {
        if on { format!("CAST({side}.\"{c}\" AS TEXT)") } else { "NULL".to_owned() }
    };
    let fields: Vec<String> = spec
        .columns
        .iter()
        .map(|c| {
            format!(
                "SELECT '{c}' AS k, {} AS b, {} AS a",
                value(old, "OLD", c),
                value(new, "NEW", c)
            )
        })
        .collect();
    let diff = format!("(SELECT * FROM ({}) WHERE b IS NOT a)", fields.join(" UNION ALL "));
    let id = format!("CAST({row}.id AS TEXT)");
    let name = format!("jadpo_audit_{}_{kind}", spec.table);
    let entity = &spec.entity;
    [
        format!("DROP TRIGGER IF EXISTS \"{name}\""),
        format!(
            "CREATE TRIGGER \"{name}\" AFTER {} ON \"{}\" BEGIN \
             INSERT INTO jadpo_audit (entity, record_id, seq, changed_at, kind, actor, action, \
             request_id, trace, changes, encoding) \
             SELECT '{entity}', {id}, \
             COALESCE((SELECT MAX(seq) FROM jadpo_audit WHERE entity = '{entity}' AND record_id = {id}), 0) + 1, \
             COALESCE({now}, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)), \
             '{kind}', COALESCE({actor}, 'outside the runtime'), {action}, {request}, {trace}, \
             (SELECT COALESCE(json_group_object(k, json_object('before', b, 'after', a)), '{{}}') FROM {diff}), \
             {encoding} WHERE '{kind}' <> 'update' OR EXISTS {diff}; END",
            kind.to_uppercase(),
            spec.table,
            now = context("now"),
            actor = context("actor"),
            action = context("action"),
            request = context("request_id"),
            trace = context("trace"),
            encoding = jadpo_core::model::encoding::AUDIT_TEXT.number,
        ),
    ]
}

/// The audit statements generated per audited entity.
pub(crate) const GENERATED: AuditStatements = AuditStatements { trigger_ddl, current, erase };

fn trigger_ddl(spec: &AuditSpec) -> Vec<String> {
    ["insert", "update", "delete"].iter().flat_map(|kind| trigger(spec, kind)).collect()
}

fn current(spec: &AuditSpec) -> String {
    let fields: Vec<String> =
        spec.columns.iter().map(|c| format!("CAST(\"{c}\" AS TEXT) AS \"{c}\"")).collect();
    format!("SELECT {} FROM \"{}\" WHERE id = $1", fields.join(", "), spec.table)
}

fn erase(spec: &AuditSpec) -> String {
    format!("DELETE FROM \"{}\" WHERE id = $1", spec.table)
}
