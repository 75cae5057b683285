//! [`SqlDialect`]: everything an adapter tells the shared roles about its SQL, as one value.
//! Plain data rather than a trait, so the roles' behaviour stays here and an adapter can only
//! choose text.

use chrono::{DateTime, Utc};
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::file_field::FileField;
use jadpo_core::model::lease::LeaseTable;
use jadpo_core::{Row, SqlValue, StoreError};
use jadpo_workflow::state::{ExecutionState, ExecutionStatus};

use crate::statement::Slot;
use crate::tables::{
    AuditSql, BreakerSql, DeliveryAdminSql, FileSql, FlagSql, HousekeepingSql, KeyedStateSql,
    LeaseSql, PasskeySql, PipelineSql, ScheduleSql, ServiceKeySql, SignInSql, StepSql,
    UserSessionSql, WebhookSql, WorkflowSql,
};

/// One dialect's statements for every role.
#[derive(Debug)]
pub struct SqlDialect {
    /// Outbox, deliveries, handled records, idempotency keys.
    pub pipeline: &'static PipelineSql,
    /// The operator's view of deliveries.
    pub delivery_admin: &'static DeliveryAdminSql,
    /// Service keys' verifiers.
    pub service_keys: &'static ServiceKeySql,
    /// Users' sessions (API tokens, browser sessions).
    pub user_sessions: &'static UserSessionSql,
    /// Sign-in requests (magic links and codes by email).
    pub sign_in: &'static SignInSql,
    /// Passkeys and the ceremonies under way.
    pub passkeys: &'static PasskeySql,
    /// Step records of runs that make changing calls.
    pub steps: &'static StepSql,
    /// The lease statements of each leased table.
    pub leases: fn(LeaseTable) -> &'static LeaseSql,
    /// The built-in services' keyed state.
    pub keyed_state: &'static KeyedStateSql,
    /// Webhook receipts.
    pub webhooks: &'static WebhookSql,
    /// Schedules, their runs and the operator-action log.
    pub schedule: &'static ScheduleSql,
    /// Housekeeping's batches and alerts.
    pub housekeeping: &'static HousekeepingSql,
    /// Circuit breakers and held deliveries.
    pub breaker: &'static BreakerSql,
    /// Feature flags and their history.
    pub flags: &'static FlagSql,
    /// The audit trail's static statements.
    pub audit: &'static AuditSql,
    /// The audit statements generated from an entity's declaration.
    pub audit_generated: AuditStatements,
    /// How many fields hold each stored file.
    pub files: &'static FileSql,
    /// The file-count triggers generated from a field's declaration.
    pub files_generated: FileStatements,
    /// The workflow tables.
    pub workflow: &'static WorkflowSql,
    /// The execution row, whose physical columns differ per dialect.
    pub execution: ExecutionLayout,
}

/// The audit statements written per audited entity. They interpolate only identifiers the
/// application declared (checked at start to be plain lower-case SQL identifiers); values are
/// parameters.
#[derive(Debug, Clone, Copy)]
pub struct AuditStatements {
    /// Idempotent statements installing the entity's triggers.
    pub trigger_ddl: fn(&AuditSpec) -> Vec<String>,
    /// `(id)` → one row whose columns are the entity's audited fields as text.
    pub current: fn(&AuditSpec) -> String,
    /// `(id)`: delete the record.
    pub erase: fn(&AuditSpec) -> String,
}

/// The statements written per declared file field. Like [`AuditStatements`] they interpolate
/// only identifiers the application declared, checked at start; none takes a parameter.
#[derive(Debug, Clone, Copy)]
pub struct FileStatements {
    /// Run first in the installing transaction: holds off writers to the field's table until
    /// it commits (`None` where a transaction already writes alone: SQLite).
    pub lock: fn(&FileField) -> Option<String>,
    /// One row whose `n` counts the field's triggers already installed.
    pub trigger_count: fn(&FileField) -> String,
    /// Idempotent statements installing the field's triggers.
    pub trigger_ddl: fn(&FileField) -> Vec<String>,
    /// Adds the files the table's rows hold in the field to `jadpo_files`' counts.
    pub count_existing: fn(&FileField) -> String,
    /// `(file_id)` → up to 100 rows holding the file: `file` (the column, JSON) and `owner`
    /// (the owner column as text, or `NULL` without one). Its one parameter is the id.
    pub holders: fn(&FileField) -> String,
}

/// The execution row in the dialect's physical layout: PostgreSQL keeps the state in columns,
/// SQLite as one JSON document.
#[derive(Debug, Clone, Copy)]
pub struct ExecutionLayout {
    /// Inserts an execution; parameters as [`params`](Self::params) lays them out, then the
    /// owner (`NULL` without one).
    pub insert: &'static str,
    /// Updates an execution (by `$1`, the run id) if it is still at the revision given after
    /// [`params`](Self::params)'s: the transition's optimistic check and its write in one
    /// statement, so that no read precedes them.
    pub update: &'static str,
    /// The row's parameters: `$1` run_id, then the dialect's columns.
    pub params: fn(&ExecutionState) -> Result<Vec<SqlValue>, StoreError>,
    /// The state back from a row of `WorkflowSql::execution_get`.
    pub from_row: fn(&Row) -> Result<ExecutionState, StoreError>,
}

/// The columns every execution layout starts with: `$1` run_id, `$2` workflow_id, `$3`
/// workflow_version, `$4` status, `$5` current_node_id, `$6` revision; each adapter's
/// [`ExecutionLayout::params`] appends its own.
pub fn execution_head(s: &ExecutionState) -> Result<Vec<SqlValue>, StoreError> {
    let revision =
        i64::try_from(s.revision).map_err(|_| StoreError::invalid("revision out of range"))?;
    Ok(vec![
        s.run_id.as_str().into(),
        s.workflow_id.as_str().into(),
        s.workflow_version.as_str().into(),
        s.status.as_str().into(),
        s.current_node_id.as_deref().map_or(SqlValue::Null, SqlValue::from),
        revision.into(),
    ])
}

/// Milliseconds since the epoch as a timestamp (the workflow model keeps times in ms).
pub fn ms(t: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t).unwrap_or_default()
}

impl SqlDialect {
    /// Every statement slot, with its declared parameters and this dialect's text: the static
    /// tables, each leased table's, the execution row's (declared by its layout's parameter
    /// count) and the audit statements generated for `audit_probe`.
    pub fn slots(&self, audit_probe: &AuditSpec) -> Result<Vec<Slot>, StoreError> {
        let mut slots = Vec::new();
        slots.extend(self.pipeline.slots());
        slots.extend(self.delivery_admin.slots());
        slots.extend(self.service_keys.slots());
        slots.extend(self.user_sessions.slots());
        slots.extend(self.sign_in.slots());
        slots.extend(self.passkeys.slots());
        slots.extend(self.steps.slots());
        for table in [LeaseTable::Housekeeping, LeaseTable::Schedules] {
            slots.extend((self.leases)(table).slots());
        }
        slots.extend(self.keyed_state.slots());
        slots.extend(self.webhooks.slots());
        slots.extend(self.schedule.slots());
        slots.extend(self.housekeeping.slots());
        slots.extend(self.breaker.slots());
        slots.extend(self.flags.slots());
        slots.extend(self.audit.slots());
        slots.extend(self.files.slots());
        slots.extend(self.workflow.slots());
        let arity = (self.execution.params)(&probe_state())?.len();
        // Both statements take one parameter after the layout's: the owner, the old revision.
        let layout: &'static [&'static str] = LAYOUT_PARAMS.get(..=arity).ok_or_else(|| {
            StoreError::internal(format!("an execution layout of {arity} parameters"))
        })?;
        slots.push(Slot {
            name: "ExecutionLayout.insert",
            params: layout,
            text: Some(self.execution.insert),
        });
        slots.push(Slot {
            name: "ExecutionLayout.update",
            params: layout,
            text: Some(self.execution.update),
        });
        let current = leak((self.audit_generated.current)(audit_probe));
        let erase = leak((self.audit_generated.erase)(audit_probe));
        slots.push(Slot { name: "AuditStatements.current", params: &["id"], text: Some(current) });
        slots.push(Slot { name: "AuditStatements.erase", params: &["id"], text: Some(erase) });
        Ok(slots)
    }
}

fn probe_state() -> ExecutionState {
    ExecutionState {
        run_id: "probe".into(),
        workflow_id: "probe".into(),
        workflow_version: "1".into(),
        status: ExecutionStatus::Running,
        current_node_id: None,
        revision: 1,
        input: serde_json::Value::Null,
        data: serde_json::Map::new(),
        error: None,
        cancellation_state: None,
        loop_state: None,
        created_at: 0,
        updated_at: 0,
    }
}

/// Checks every slot of `dialect` against its declaration ([`crate::check`]), with the audit
/// statements generated for a probe entity: the number of slots read, or every mismatch.
pub fn check_dialect(dialect: &SqlDialect) -> Result<usize, Vec<String>> {
    let probe = AuditSpec {
        entity: "note".into(),
        store: "main".into(),
        table: "notes".into(),
        columns: vec!["title".into(), "body".into()],
        retention: std::time::Duration::from_secs(60),
    };
    let slots = dialect.slots(&probe).map_err(|e| vec![e.to_string()])?;
    let wrong: Vec<String> = slots.iter().filter_map(crate::statement::check).collect();
    if wrong.is_empty() { Ok(slots.len()) } else { Err(wrong) }
}

/// Names for an execution layout's parameters, positionally (the layout documents them).
const LAYOUT_PARAMS: &[&str] = &[
    "run_id", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13", "p14",
    "p15", "p16",
];

/// Generated text made `'static` for a [`Slot`]; only the contract test generates it.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}
