//! The specification's physical column reference, as data.
//!
//! The workflow store's physical columns as its specification fixes them (SQLite v3 and
//! PostgreSQL v4, plus the `owner` column jadpo migration 8 adds to runs and Sessions and the `actor` column
//! jadpo migration 13 adds to events; `docs/tables.md` describes the tables). Types are written as the specification
//! writes them and translated to what each database prints; defaults are compared without casts
//! and case.

use jadpo_core::Dialect;

/// One column: name, spec type, NOT NULL, default.
pub type Col = (&'static str, &'static str, bool, Option<&'static str>);

/// One table of the reference.
pub struct SpecTable {
    /// Table name.
    pub name: &'static str,
    pub columns: Vec<Col>,
    pub primary_key: &'static [&'static str],
    /// Foreign keys `(column, referenced table, referenced column)`, all `ON DELETE CASCADE`.
    pub cascades: &'static [(&'static str, &'static str, &'static str)],
    /// Column lists that must be unique.
    pub unique: &'static [&'static [&'static str]],
    /// Column lists an index must lead with.
    pub indexed: &'static [&'static [&'static str]],
}

const RUN_FK: &[(&str, &str, &str)] = &[("run_id", "workflow_executions", "run_id")];

/// The workflow store's tables for `dialect`.
pub fn workflow_tables(dialect: Dialect) -> Vec<SpecTable> {
    match dialect {
        Dialect::Sqlite => sqlite_tables(),
        Dialect::Postgres => postgres_tables(),
    }
}

fn sqlite_tables() -> Vec<SpecTable> {
    vec![
        SpecTable {
            name: "workflow_executions",
            columns: vec![
                ("run_id", "TEXT", false, None),
                ("workflow_id", "TEXT", true, None),
                ("workflow_version", "TEXT", true, None),
                ("status", "TEXT", true, None),
                ("current_node_id", "TEXT", false, None),
                ("revision", "INTEGER", true, Some("0")),
                ("state_json", "TEXT", true, None),
                ("created_at", "INTEGER", true, None),
                ("updated_at", "INTEGER", true, None),
                // jadpo migration 8: the principal that created the run.
                ("owner", "TEXT", false, None),
            ],
            primary_key: &["run_id"],
            cascades: &[],
            unique: &[],
            indexed: &[&["status"]],
        },
        SpecTable {
            name: "workflow_events",
            columns: vec![
                ("id", "TEXT", false, None),
                ("run_id", "TEXT", true, None),
                ("seq", "INTEGER", true, None),
                ("type", "TEXT", true, None),
                ("payload", "TEXT", true, None),
                ("timestamp", "INTEGER", true, None),
                ("actor", "TEXT", false, None),
            ],
            primary_key: &["id"],
            cascades: RUN_FK,
            unique: &[&["run_id", "seq"]],
            indexed: &[&["run_id", "seq"]],
        },
        SpecTable {
            name: "outbox_commands",
            columns: vec![
                ("id", "TEXT", false, None),
                ("run_id", "TEXT", true, None),
                ("seq", "INTEGER", true, None),
                ("node_id", "TEXT", true, None),
                ("type", "TEXT", true, None),
                ("payload", "TEXT", true, None),
                ("status", "TEXT", true, Some("'pending'")),
                ("idempotency_key", "TEXT", false, None),
                ("created_at", "INTEGER", true, None),
                ("processed_at", "INTEGER", false, None),
            ],
            primary_key: &["id"],
            cascades: RUN_FK,
            unique: &[],
            indexed: &[&["status"]],
        },
        SpecTable {
            name: "execution_leases",
            columns: vec![
                ("run_id", "TEXT", false, None),
                ("worker_id", "TEXT", true, None),
                ("lease_id", "TEXT", true, None),
                ("expires_at", "INTEGER", true, None),
            ],
            primary_key: &["run_id"],
            cascades: RUN_FK,
            unique: &[],
            indexed: &[&["expires_at"]],
        },
        SpecTable {
            name: "sessions",
            columns: vec![
                ("id", "TEXT", false, None),
                ("user_id", "TEXT", true, None),
                ("context", "TEXT", true, Some("'{}'")),
                ("active_run_id", "TEXT", false, None),
                ("revision", "INTEGER", true, Some("0")),
                ("context_revision", "INTEGER", true, Some("0")),
                ("created_at", "INTEGER", true, None),
                ("updated_at", "INTEGER", true, None),
                // jadpo migration 8: the principal that created the Session.
                ("owner", "TEXT", false, None),
            ],
            primary_key: &["id"],
            cascades: &[],
            unique: &[],
            indexed: &[&["user_id"]],
        },
    ]
}

fn postgres_tables() -> Vec<SpecTable> {
    const V255: &str = "VARCHAR(255)";
    vec![
        SpecTable {
            name: "workflow_executions",
            columns: vec![
                ("run_id", V255, true, None),
                ("workflow_id", V255, true, None),
                ("workflow_version", "VARCHAR(50)", true, None),
                ("status", "VARCHAR(50)", true, None),
                ("current_node_id", V255, false, None),
                ("revision", "INTEGER", true, Some("0")),
                ("input", "JSONB", true, None),
                ("data", "JSONB", true, None),
                ("error", "JSONB", false, None),
                ("cancellation_state", "JSONB", false, None),
                ("loop_state", "JSONB", false, None),
                ("created_at", "TIMESTAMPTZ", true, None),
                ("updated_at", "TIMESTAMPTZ", true, None),
                // jadpo migration 8: the principal that created the run.
                ("owner", V255, false, None),
            ],
            primary_key: &["run_id"],
            cascades: &[],
            unique: &[],
            indexed: &[&["status"]],
        },
        SpecTable {
            name: "workflow_events",
            columns: vec![
                ("id", V255, true, None),
                ("run_id", V255, true, None),
                ("seq", "INTEGER", true, None),
                ("type", "VARCHAR(100)", true, None),
                ("payload", "JSONB", true, None),
                ("timestamp", "BIGINT", true, None),
                ("actor", V255, false, None),
            ],
            primary_key: &["id"],
            cascades: RUN_FK,
            unique: &[&["run_id", "seq"]],
            indexed: &[&["run_id", "seq"]],
        },
        SpecTable {
            name: "outbox_commands",
            columns: vec![
                ("id", V255, true, None),
                ("run_id", V255, true, None),
                ("seq", "INTEGER", true, None),
                ("node_id", V255, true, None),
                ("type", "VARCHAR(100)", true, None),
                ("payload", "JSONB", true, None),
                ("status", "VARCHAR(50)", true, Some("'pending'")),
                ("idempotency_key", V255, false, None),
                ("created_at", "TIMESTAMPTZ", true, None),
                ("processed_at", "TIMESTAMPTZ", false, None),
            ],
            primary_key: &["id"],
            cascades: RUN_FK,
            unique: &[],
            indexed: &[&["status"]],
        },
        SpecTable {
            name: "execution_leases",
            columns: vec![
                ("run_id", V255, true, None),
                ("worker_id", V255, true, None),
                ("lease_id", V255, true, None),
                ("expires_at", "BIGINT", true, None),
            ],
            primary_key: &["run_id"],
            cascades: RUN_FK,
            unique: &[],
            indexed: &[&["expires_at"]],
        },
        SpecTable {
            name: "sessions",
            columns: vec![
                ("id", V255, true, None),
                ("user_id", V255, true, None),
                ("context", "JSONB", true, Some("'{}'")),
                ("active_run_id", V255, false, None),
                ("revision", "BIGINT", true, Some("0")),
                ("context_revision", "BIGINT", true, Some("0")),
                ("created_at", "TIMESTAMPTZ", true, None),
                ("updated_at", "TIMESTAMPTZ", true, None),
                // jadpo migration 8: the principal that created the Session.
                ("owner", V255, false, None),
            ],
            primary_key: &["id"],
            cascades: &[],
            unique: &[],
            indexed: &[&["user_id"]],
        },
    ]
}

/// The spec's ledger `invariant_schema_migrations` in `dialect`'s shape.
pub fn ledger_table(dialect: Dialect) -> SpecTable {
    let columns = match dialect {
        Dialect::Sqlite => {
            vec![("version", "INTEGER", false, None), ("applied_at", "INTEGER", true, None)]
        }
        Dialect::Postgres => vec![
            ("version", "INTEGER", true, None),
            ("description", "TEXT", true, None),
            ("applied_at", "TIMESTAMPTZ", true, Some("now()")),
        ],
    };
    SpecTable {
        name: "invariant_schema_migrations",
        columns,
        primary_key: &["version"],
        cascades: &[],
        unique: &[],
        indexed: &[],
    }
}

/// What `dialect`'s catalog prints for a spec type.
pub fn printed_type(dialect: Dialect, spec: &str) -> String {
    if dialect == Dialect::Sqlite {
        return spec.to_owned();
    }
    if let Some(len) = spec.strip_prefix("VARCHAR(") {
        return format!("character varying({len}");
    }
    match spec {
        "INTEGER" => "integer",
        "BIGINT" => "bigint",
        "TEXT" => "text",
        "JSONB" => "jsonb",
        "TIMESTAMPTZ" => "timestamp with time zone",
        other => other,
    }
    .to_owned()
}

/// A default expression without casts, lower case: `'{}'::jsonb` → `'{}'`, `NOW()` → `now()`.
pub fn normalized_default(printed: &str) -> String {
    let without_cast = match printed.find("::") {
        Some(i) if printed.starts_with('\'') => &printed[..i],
        _ => printed,
    };
    without_cast.trim().to_lowercase()
}
