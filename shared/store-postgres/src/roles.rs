//! Database roles on PostgreSQL: the statement that gives the functions' role and the operators'
//! role what each needs and no more, run by the schema's owner (`jadpo roles grant`).
//!
//! Why: one role for everything lets a compromised function rewrite the trail that would show
//! what it did. With these grants the runtime's role only reads `jadpo_audit` and
//! `jadpo_operator_actions`: the audit trigger writes the trail as its owner (migration 16), and
//! operators' actions are recorded by `jadpo` under the operators' role, so the runtime can
//! neither forge a row nor update or delete one. It only reads the migration ledgers, and it may
//! not create temporary tables (`TEMPORARY` on the database is revoked from `PUBLIC` too, which
//! holds it by default): a temporary table named like a trail table is how a session would hide
//! its changes from a function whose search path does not put `pg_temp` last (migration 21 puts
//! it last in the audit functions'). Operators may erase audit rows with their record, but not
//! rewrite their own action log.

use jadpo_core::StoreError;

/// A role name as the statement embeds it: a plain lower-case identifier (DDL cannot take a
/// role as a parameter, so only such a name is accepted; it is quoted as well).
fn role(name: &str) -> Result<&str, StoreError> {
    let plain = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        Ok(name)
    } else {
        Err(StoreError::invalid(format!(
            "role {name:?} is not a plain lower-case identifier (letters, digits and _, at most \
             63 characters)"
        )))
    }
}

/// The rights of `who` on the current schema: every table's rows, then the exceptions.
/// `trail_rights` is what it keeps on the trail's two tables.
fn rights(who: &str, trail_revoked: &str) -> String {
    format!(
        "EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', s, '{who}');
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO %I', s, '{who}');
    EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA %I TO %I', s, '{who}');
    EXECUTE format('REVOKE {trail_revoked} FROM %I', '{who}');
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE ON jadpo_migrations, invariant_schema_migrations FROM %I', '{who}');
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', s, '{who}');
"
    )
}

/// The one statement granting `runtime` (and `operator`, when given) their rights on every
/// table of the current schema. Idempotent: run it after every `jadpo migrate apply`; default
/// privileges give tables the owner creates later the same rights meanwhile (the exceptions are
/// set again by the next run).
pub fn grants(runtime: &str, operator: Option<&str>) -> Result<String, StoreError> {
    let runtime = role(runtime)?;
    let mut body = rights(runtime, "INSERT, UPDATE, DELETE ON jadpo_audit, jadpo_operator_actions");
    body.push_str(&format!(
        "EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, %I', current_database(), '{runtime}');\n"
    ));
    if let Some(operator) = operator {
        body.push_str(&rights(role(operator)?, "UPDATE, DELETE ON jadpo_operator_actions"));
    }
    Ok(format!(
        "DO $jadpo_grants$
DECLARE
    s text := current_schema();
BEGIN
    IF to_regclass('jadpo_audit') IS NULL OR to_regprocedure('jadpo_audit_trusted()') IS NULL THEN
        RAISE EXCEPTION 'this database is not migrated: run jadpo migrate apply first';
    END IF;
    {body}END
$jadpo_grants$"
    ))
}

#[cfg(test)]
mod tests {
    use super::grants;

    #[test]
    fn only_plain_role_names_are_embedded() {
        for bad in ["", "Runtime", "a-b", "x'; DROP TABLE t; --", "1st", &"r".repeat(64)] {
            let err = grants(bad, None).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("not a plain lower-case identifier"), "{bad:?}: {err}");
            let err = grants("ok", Some(bad)).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("not a plain lower-case identifier"), "{bad:?}: {err}");
        }
        let sql = grants("jadpo_runtime", Some("ops")).unwrap_or_else(|e| panic!("{e}"));
        assert!(sql.contains(
            "REVOKE INSERT, UPDATE, DELETE ON jadpo_audit, jadpo_operator_actions FROM %I', 'jadpo_runtime'"
        ));
        assert!(sql.contains("REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, %I'"));
        assert!(sql.contains("REVOKE UPDATE, DELETE ON jadpo_operator_actions FROM %I', 'ops'"));
    }
}
