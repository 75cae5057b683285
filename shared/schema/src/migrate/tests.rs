use chrono::DateTime;

use std::collections::BTreeSet;

use super::*;
use crate::placement::Feature;

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
        features: None,
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
    let order: Vec<_> = p.apply.iter().map(|s| (s.migration.ledger, s.migration.version)).collect();
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

/// A catalog whose one jadpo migration makes tables of two features and alters a workflow table.
fn two_features() -> MigrationCatalog {
    let sql = "CREATE TABLE jadpo_outbox (id TEXT);\n\
               CREATE INDEX jadpo_outbox_id_idx ON jadpo_outbox (id);\n\
               CREATE TABLE jadpo_flags (name TEXT);\n\
               ALTER TABLE workflow_events ADD COLUMN actor TEXT;";
    MigrationCatalog::builtin(Dialect::Sqlite, vec![], vec![jp(1, sql)])
        .unwrap_or_else(|e| panic!("{e}"))
}

fn placed(features: &[Feature]) -> MigrationCatalog {
    let set = features.iter().copied().collect();
    two_features().with_placement(set).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_placed_catalog_runs_only_its_features_statements_and_records_them() {
    let c = placed(&[Feature::Pipeline, Feature::Housekeeping]);
    let p = plan(&c, &[]).unwrap_or_else(|e| panic!("{e}"));
    let [step] = p.apply.as_slice() else { panic!("{p:?}") };
    assert!(
        step.sql.contains("CREATE TABLE jadpo_outbox") && step.sql.contains("jadpo_outbox_id_idx")
    );
    assert!(step.sql.contains("workflow_events"), "the workflow store's statements run everywhere");
    assert!(!step.sql.contains("jadpo_flags"), "{}", step.sql);
    assert_eq!(step.features.as_deref(), Some("pipeline,housekeeping"));
    assert_eq!(step.extends, None);
    let all = two_features();
    let whole = plan(&all, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(whole.apply[0].sql, whole.apply[0].migration.sql, "no placement: the file as it is");
    assert_eq!(whole.apply[0].features, None);
}

#[test]
fn a_feature_placed_later_gets_the_statements_it_was_not_given() {
    let before = placed(&[Feature::Pipeline]);
    let m = before.all().next().cloned().unwrap_or_else(|| jp(1, ""));
    let mut ran = applied(&m, Some(m.checksum()));
    ran.features = Some(BTreeSet::from([Feature::Pipeline]));
    assert!(plan(&before, &[ran.clone()]).unwrap_or_else(|e| panic!("{e}")).apply.is_empty());

    let after = placed(&[Feature::Pipeline, Feature::Flags]);
    let p = plan(&after, &[ran.clone()]).unwrap_or_else(|e| panic!("{e}"));
    let [step] = p.apply.as_slice() else { panic!("{p:?}") };
    assert_eq!(step.sql.trim(), "CREATE TABLE jadpo_flags (name TEXT);");
    assert_eq!(step.extends, Some(BTreeSet::from([Feature::Pipeline])));
    assert_eq!(step.features.as_deref(), Some("pipeline,flags"));

    // A feature with no statement in the migration asks for nothing.
    let audit = placed(&[Feature::Pipeline, Feature::Audit]);
    assert!(plan(&audit, &[ran.clone()]).unwrap_or_else(|e| panic!("{e}")).apply.is_empty());
    // Run whole (the legacy form), nothing is missing.
    ran.features = None;
    assert!(plan(&after, &[ran]).unwrap_or_else(|e| panic!("{e}")).apply.is_empty());
}

#[test]
fn an_unattributed_statement_refuses_the_placement() {
    let c = MigrationCatalog::builtin(
        Dialect::Sqlite,
        vec![],
        vec![jp(1, "CREATE TABLE jadpo_c (x INTEGER)")],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let err = c.with_placement(BTreeSet::new()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("jadpo migration 1 (j1): jadpo_c belongs to no feature"), "{err}");
}
