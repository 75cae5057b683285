//! Audit statements (PostgreSQL). The trigger function `jadpo_audit_row` comes with jadpo
//! migration 7; each audited table gets one row-level trigger calling it with the entity's born
//! name and its audited columns. Identifiers come from the application's declaration, checked at
//! start to be plain lower-case identifiers, and are quoted here as well.

use jadpo_core::model::audit::AuditSpec;
use jadpo_store_sql::sql;
use jadpo_store_sql::tables::audit;
use jadpo_store_sql::{AuditSql, AuditStatements};

/// The static audit statements. The context lives in transaction-local settings, gone with the
/// transaction.
pub(crate) static AUDIT: AuditSql = AuditSql {
    set_context: sql!(
        audit::SetContext,
        "SELECT set_config('jadpo.actor', $actor, true), set_config('jadpo.action', $action, true), \
        set_config('jadpo.request', COALESCE($request_id::text, ''), true), \
        set_config('jadpo.trace', COALESCE($trace::text, ''), true), \
        set_config('jadpo.now', $now::timestamptz::text, true)",
    ),
    clear_context: None,
    release: None,
    unrelease: None,
    rows: sql!(
        audit::Rows,
        "SELECT entity, record_id, seq, changed_at, kind, actor, db_role, action, request_id, \
        trace, changes, encoding FROM jadpo_audit WHERE entity = $entity AND record_id = $record_id ORDER BY seq",
    ),
    delete_rows: sql!(
        audit::DeleteRows,
        "DELETE FROM jadpo_audit WHERE entity = $entity AND record_id = $record_id"
    ),
    // Through the owner's function (migration 16): a role other than the owner cannot expire
    // rows before their retention, whatever cutoff it gives.
    expire: sql!(audit::Expire, "SELECT seq FROM jadpo_audit_expire($entity, $cutoff, $limit)"),
};

/// The audit statements generated per audited entity.
pub(crate) const GENERATED: AuditStatements = AuditStatements { trigger_ddl, current, erase };

fn trigger_ddl(spec: &AuditSpec) -> Vec<String> {
    vec![
        format!(
            "CREATE OR REPLACE TRIGGER jadpo_audit AFTER INSERT OR UPDATE OR DELETE ON \"{}\" \
             FOR EACH ROW EXECUTE FUNCTION jadpo_audit_row('{}', '{}')",
            spec.table,
            spec.entity,
            spec.columns.join(",")
        ),
        retention_ddl(spec),
    ]
}

/// The entity's retention, as `jadpo_audit_expire` reads it for a role other than the owner:
/// a function installed with the trigger, so the runtime's role cannot change it. A retention
/// past the calendar (over 9,000 years) is "keep forever": no row of the entity expires.
fn retention_ddl(spec: &AuditSpec) -> String {
    const FOREVER_SECS: u64 = 9_000 * 366 * 24 * 3600;
    let secs = spec.retention.as_secs();
    let kept = if secs >= FOREVER_SECS {
        "NULL::interval".to_owned()
    } else {
        format!("make_interval(secs => {secs})")
    };
    format!(
        "CREATE OR REPLACE FUNCTION \"jadpo_audit_retention_{}\"() RETURNS interval \
         LANGUAGE sql IMMUTABLE AS $$ SELECT {kept} $$",
        spec.entity
    )
}

fn current(spec: &AuditSpec) -> String {
    let fields: Vec<String> =
        spec.columns.iter().map(|c| format!("to_jsonb(t) ->> '{c}' AS \"{c}\"")).collect();
    format!("SELECT {} FROM \"{}\" t WHERE t.id::text = $1", fields.join(", "), spec.table)
}

fn erase(spec: &AuditSpec) -> String {
    format!("DELETE FROM \"{}\" WHERE id::text = $1", spec.table)
}
