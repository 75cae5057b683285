use std::collections::BTreeMap;

use chrono::DateTime;
use jadpo_schema::migrate::{AppliedMigration, Ledger};
use jadpo_schema::snapshot::{Provenance, Snapshot};
use jadpo_schema::table::{ColumnInfo, IndexInfo, TableSchema};

use super::*;

fn column(name: &str) -> ColumnInfo {
    ColumnInfo {
        name: name.to_owned(),
        data_type: "text".to_owned(),
        not_null: false,
        default: None,
    }
}

fn outbox(with_encoding: bool) -> TableSchema {
    let mut columns = vec![column("id"), column("payload")];
    if with_encoding {
        columns.push(ColumnInfo { data_type: "smallint".into(), ..column("encoding") });
    }
    TableSchema {
        name: "jadpo_outbox".into(),
        columns,
        primary_key: vec!["id".into()],
        foreign_keys: vec![],
        indexes: vec![IndexInfo {
            name: "jadpo_outbox_created_idx".into(),
            columns: vec!["payload".into()],
            unique: false,
        }],
    }
}

fn flags() -> TableSchema {
    TableSchema { name: "jadpo_flags".into(), indexes: vec![], ..outbox(false) }
}

fn snapshot(jadpo: u32, tables: Vec<TableSchema>) -> Snapshot {
    Snapshot::new("main", "sqlite", BTreeMap::from([("jadpo".to_owned(), jadpo)]), tables)
}

fn provenance() -> Provenance {
    let by = |v: u32, n: &str| ("jadpo".to_owned(), v, n.to_owned());
    Provenance::from([
        ("jadpo_outbox".to_owned(), by(1, "pipeline")),
        ("jadpo_outbox.id".to_owned(), by(1, "pipeline")),
        ("jadpo_outbox.payload".to_owned(), by(1, "pipeline")),
        ("jadpo_outbox:jadpo_outbox_created_idx".to_owned(), by(1, "pipeline")),
        ("jadpo_outbox.encoding".to_owned(), by(18, "encodings")),
        ("jadpo_flags".to_owned(), by(6, "flags")),
    ])
}

fn applied(versions: std::ops::RangeInclusive<u32>) -> Vec<AppliedMigration> {
    versions
        .map(|version| AppliedMigration {
            ledger: Ledger::Jadpo,
            version,
            checksum: Some(String::new()),
            applied_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
            features: None,
        })
        .collect()
}

fn codes(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.code.as_str()).collect()
}

fn expected<'a>(
    built: &'a Snapshot,
    provenance: &'a Provenance,
    placed: &'a [&'a str],
) -> Expected<'a> {
    Expected { store: "main", dialect: "sqlite", built, provenance, placed }
}

#[test]
fn a_placed_table_no_migration_creates_is_found() {
    let (built, p) = (snapshot(18, vec![outbox(true)]), provenance());
    let e = expected(&built, &p, &["jadpo_outbox", "jadpo_flags"]);
    let found = check_placement(&e);
    assert_eq!(codes(&found), ["placement.not_created"]);
    assert!(found[0].message.contains("places jadpo_flags here"), "{}", found[0].message);
    assert!(check_placement(&expected(&built, &p, &["jadpo_outbox"])).is_empty());
}

#[test]
fn a_snapshot_older_than_a_migration_is_out_of_date_and_names_it() {
    let (built, p) = (snapshot(18, vec![outbox(true)]), provenance());
    let e = expected(&built, &p, &["jadpo_outbox"]);
    let old = snapshot(17, vec![outbox(false)]);
    let found = check_snapshot(&e, Some(&old), "migrations/snapshots/sqlite/main.json");
    assert_eq!(codes(&found), ["migration.out_of_date"]);
    let message = &found[0].message;
    assert!(
        message
            .contains("predates jadpo migration 18 (encodings), which adds jadpo_outbox.encoding"),
        "{message}"
    );
    assert!(check_snapshot(&e, Some(&built), "x").is_empty(), "the same schema passes");
    let missing = check_snapshot(&e, None, "migrations/snapshots/sqlite/main.json");
    assert_eq!(codes(&missing), ["snapshot.missing"]);
    assert!(missing[0].fix.contains("jadpo snapshot"));
}

#[test]
fn a_migration_whose_result_changed_differs_from_its_snapshot() {
    let (p, mut changed) = (provenance(), outbox(true));
    changed.columns[1].data_type = "bytea".into();
    let built = snapshot(18, vec![changed]);
    let e = expected(&built, &p, &["jadpo_outbox"]);
    let found = check_snapshot(&e, Some(&snapshot(18, vec![outbox(true)])), "x");
    assert_eq!(codes(&found), ["snapshot.column_retyped"]);
    assert!(found[0].fix.contains("must not change"), "{}", found[0].fix);
}

#[test]
fn drift_by_hand_in_a_live_database_is_found_by_kind() {
    let (built, p) = (snapshot(18, vec![outbox(true)]), provenance());
    let e = expected(&built, &p, &["jadpo_outbox"]);
    let all = applied(1..=18);
    assert!(check_live(&e, &built, &[outbox(true)], &all).is_empty(), "no drift");

    let mut added = outbox(true);
    added.columns.push(column("note"));
    assert_eq!(codes(&check_live(&e, &built, &[added], &all)), ["database.column_added"]);

    let mut dropped_index = outbox(true);
    dropped_index.indexes.clear();
    assert_eq!(codes(&check_live(&e, &built, &[dropped_index], &all)), ["database.index_missing"]);

    let mut retyped = outbox(true);
    retyped.columns[1].data_type = "integer".into();
    assert_eq!(codes(&check_live(&e, &built, &[retyped], &all)), ["database.column_retyped"]);

    let mut renamed = outbox(true);
    renamed.columns[1].name = "body".into();
    let found = check_live(&e, &built, &[renamed], &all);
    assert_eq!(codes(&found), ["database.column_renamed"]);
    assert!(found[0].fix.contains("rename it back to payload"), "{}", found[0].fix);

    // The encoding column missing while migration 18 is applied: dropped by hand.
    assert_eq!(codes(&check_live(&e, &built, &[outbox(false)], &all)), ["database.column_dropped"]);
}

#[test]
fn a_live_database_behind_the_migrations_is_out_of_date_with_the_migration() {
    let (built, p) = (snapshot(18, vec![outbox(true)]), provenance());
    let e = expected(&built, &p, &["jadpo_outbox"]);
    let found = check_live(&e, &built, &[outbox(false)], &applied(1..=17));
    assert_eq!(codes(&found), ["migration.out_of_date"]);
    assert!(
        found[0].message.contains("has not applied jadpo migration 18 (encodings)"),
        "{found:?}"
    );
    assert!(found[0].fix.contains("jadpo migrate apply"));
}

#[test]
fn an_unplaced_system_table_is_a_notice_that_says_how_to_drop_it() {
    let (built, p) = (snapshot(18, vec![outbox(true)]), provenance());
    let e = expected(&built, &p, &["jadpo_outbox"]);
    let found = check_live(&e, &built, &[outbox(true), flags()], &applied(1..=18));
    assert_eq!(codes(&found), ["placement.unplaced"]);
    assert_eq!(found[0].severity, Severity::Notice);
    assert!(found[0].fix.contains("jadpo migrate drop-unplaced --store main"), "{}", found[0].fix);
    let mut other = flags();
    other.name = "orders_copy".into();
    assert_eq!(
        codes(&check_live(&e, &built, &[outbox(true), other], &applied(1..=18))),
        ["database.table_added"]
    );
}

#[test]
fn a_system_table_placed_anew_says_the_declaration_changed() {
    let (built, p) = (snapshot(18, vec![outbox(true), flags()]), provenance());
    let e = expected(&built, &p, &["jadpo_outbox", "jadpo_flags"]);
    let found = check_snapshot(&e, Some(&snapshot(18, vec![outbox(true)])), "x");
    assert_eq!(codes(&found), ["snapshot.table_added"]);
    assert!(found[0].fix.contains("places the runtime's tables differently"), "{}", found[0].fix);
}
