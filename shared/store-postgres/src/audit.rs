//! Audit statements (PostgreSQL). The trigger function `jadpo_audit_row` comes with jadpo
//! migration 7; each audited table gets one row-level trigger calling it with the entity's born
//! name and its audited columns. Identifiers come from the application's declaration, checked at
//! start to be plain lower-case identifiers, and are quoted here as well.

use jadpo_core::model::audit::AuditSpec;
use jadpo_store_sql::{AuditSql, AuditStatements, Statement};

/// The static audit statements. The context lives in transaction-local settings, gone with the
/// transaction.
pub static AUDIT: AuditSql = AuditSql {
    set_context: Statement::new(
        "SELECT set_config('jadpo.actor', $1, true), set_config('jadpo.action', $2, true), \
        set_config('jadpo.request', COALESCE($3::text, ''), true), \
        set_config('jadpo.trace', COALESCE($4::text, ''), true), \
        set_config('jadpo.now', $5::timestamptz::text, true)",
    ),
    clear_context: None,
    rows: Statement::new(
        "SELECT entity, record_id, seq, changed_at, kind, actor, action, request_id, trace, \
        changes, encoding FROM jadpo_audit WHERE entity = $1 AND record_id = $2 ORDER BY seq",
    ),
    delete_rows: Statement::new("DELETE FROM jadpo_audit WHERE entity = $1 AND record_id = $2"),
    expire: Statement::new(
        "DELETE FROM jadpo_audit WHERE (entity, record_id, seq) IN ( \
        SELECT entity, record_id, seq FROM jadpo_audit WHERE entity = $1 AND changed_at < $2 \
        LIMIT $3 FOR UPDATE SKIP LOCKED)",
    ),
};

/// The audit statements generated per audited entity.
pub const GENERATED: AuditStatements = AuditStatements { trigger_ddl, current, erase };

fn trigger_ddl(spec: &AuditSpec) -> Vec<String> {
    vec![format!(
        "CREATE OR REPLACE TRIGGER jadpo_audit AFTER INSERT OR UPDATE OR DELETE ON \"{}\" \
         FOR EACH ROW EXECUTE FUNCTION jadpo_audit_row('{}', '{}')",
        spec.table,
        spec.entity,
        spec.columns.join(",")
    )]
}

fn current(spec: &AuditSpec) -> String {
    let fields: Vec<String> =
        spec.columns.iter().map(|c| format!("to_jsonb(t) ->> '{c}' AS \"{c}\"")).collect();
    format!("SELECT {} FROM \"{}\" t WHERE t.id::text = $1", fields.join(", "), spec.table)
}

fn erase(spec: &AuditSpec) -> String {
    format!("DELETE FROM \"{}\" WHERE id::text = $1", spec.table)
}
