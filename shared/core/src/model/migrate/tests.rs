use chrono::DateTime;

use super::*;

fn wf(version: u32, sql: &str) -> Migration {
    Migration::new(Ledger::Workflow, version, &format!("m{version}"), sql)
}

fn jp(version: u32, sql: &str) -> Migration {
    Migration::new(Ledger::Jadpo, version, &format!("j{version}"), sql)
}

fn catalog() -> MigrationCatalog {
    MigrationCatalog::builtin(
        Dialect::Sqlite,
        vec![wf(1, "CREATE TABLE a (x INTEGER)"), wf(2, "CREATE TABLE b (x INTEGER)")],
        vec![jp(1, "CREATE TABLE jadpo_c (x INTEGER)")],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn applied(m: &Migration, checksum: Option<String>) -> AppliedMigration {
    AppliedMigration {
        ledger: m.ledger,
        version: m.version,
        checksum,
        applied_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
    }
}

#[test]
fn checksum_is_sha256_hex_of_the_text() {
    let m = wf(1, "");
    assert_eq!(m.checksum(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_ne!(wf(1, "a").checksum(), wf(1, "b").checksum());
}

#[test]
fn empty_database_plans_everything_in_order() {
    let c = catalog();
    let p = plan(&c, &[]).unwrap_or_else(|e| panic!("{e}"));
    let order: Vec<_> = p.apply.iter().map(|m| (m.ledger, m.version)).collect();
    assert_eq!(order, vec![(Ledger::Workflow, 1), (Ledger::Workflow, 2), (Ledger::Jadpo, 1)]);
    assert!(p.adopt.is_empty());
}

#[test]
fn fully_applied_database_plans_nothing() {
    let c = catalog();
    let done: Vec<_> = c.all().map(|m| applied(m, Some(m.checksum()))).collect();
    assert_eq!(plan(&c, &done).unwrap_or_else(|e| panic!("{e}")), Plan::default());
    assert!(compare(&c, &done).iter().all(|s| s.state.label() == "applied"));
}

#[test]
fn edited_migration_is_refused_by_name() {
    let c = catalog();
    let first = c.all().next().cloned().unwrap_or_else(|| wf(1, ""));
    let err = plan(&c, &[applied(&first, Some(wf(1, "CREATE TABLE a (y TEXT)").checksum()))])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("workflow migration 1 (m1) was edited"), "{err}");
}

#[test]
fn versions_only_in_the_spec_ledger_are_adopted() {
    let c = catalog();
    let first = wf(1, "CREATE TABLE a (x INTEGER)");
    let p = plan(&c, &[applied(&first, None)]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.adopt.len(), 1);
    assert_eq!(p.apply.len(), 2);
}

#[test]
fn unknown_applied_version_is_refused() {
    let c = catalog();
    let future = jp(7, "x");
    let err = plan(&c, &[applied(&future, Some(future.checksum()))]).err();
    assert!(matches!(err, Some(MigrateError::UnknownApplied { version: 7, .. })), "{err:?}");
    let listed = compare(&c, &[applied(&future, Some(future.checksum()))]);
    assert_eq!(listed.last().map(|s| s.state.label()), Some("unknown"));
}

#[test]
fn a_gap_below_an_applied_version_is_refused() {
    let c = catalog();
    let second = wf(2, "CREATE TABLE b (x INTEGER)");
    let err = plan(&c, &[applied(&second, Some(second.checksum()))]).err();
    assert!(
        matches!(err, Some(MigrateError::OutOfOrder { version: 1, highest: 2, .. })),
        "{err:?}"
    );
}

#[test]
fn app_migrations_continue_after_the_builtins() {
    let ok = catalog().with_app_migrations(vec![wf(3, "CREATE TABLE app (x INTEGER)")]);
    let c = ok.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.builtin_workflow_count(), 2);
    assert_eq!(c.all().count(), 4);
    let err = catalog().with_app_migrations(vec![wf(2, "x")]).err().map(|e| e.to_string());
    assert!(err.unwrap_or_default().contains("must have a version above 2"));
    let err = catalog().with_app_migrations(vec![jp(5, "x")]).err().map(|e| e.to_string());
    assert!(err.unwrap_or_default().contains("must be in the workflow ledger"));
}

#[test]
fn builtin_lists_must_increase() {
    let err = MigrationCatalog::builtin(Dialect::Postgres, vec![wf(2, "a"), wf(1, "b")], vec![]);
    assert!(matches!(err, Err(MigrateError::InvalidCatalog(_))));
}
