use super::*;
use crate::table::{ColumnInfo, ForeignKeyInfo, IndexInfo};

fn column(name: &str, data_type: &str, not_null: bool) -> ColumnInfo {
    ColumnInfo { name: name.to_owned(), data_type: data_type.to_owned(), not_null, default: None }
}

fn outbox() -> TableSchema {
    TableSchema {
        name: "jadpo_outbox".to_owned(),
        columns: vec![
            column("id", "text", true),
            column("payload", "text", true),
            column("note", "text", false),
        ],
        primary_key: vec!["id".to_owned()],
        foreign_keys: vec![],
        indexes: vec![IndexInfo {
            name: "outbox_payload_idx".to_owned(),
            columns: vec!["payload".to_owned()],
            unique: false,
        }],
    }
}

fn deliveries() -> TableSchema {
    TableSchema {
        name: "jadpo_deliveries".to_owned(),
        columns: vec![column("id", "text", true), column("event_id", "text", true)],
        primary_key: vec!["id".to_owned()],
        foreign_keys: vec![ForeignKeyInfo {
            columns: vec!["event_id".to_owned()],
            references_table: "jadpo_outbox".to_owned(),
            references_columns: vec!["id".to_owned()],
            on_delete: "CASCADE".to_owned(),
        }],
        indexes: vec![],
    }
}

fn codes(drifts: &[Drift]) -> Vec<&'static str> {
    drifts.iter().map(Drift::code).collect()
}

#[test]
fn the_same_schema_has_no_drift() {
    assert!(diff(&[outbox(), deliveries()], &[deliveries(), outbox()]).is_empty());
}

#[test]
fn a_hand_added_column_is_found() {
    let mut found = outbox();
    found.columns.push(column("extra", "integer", false));
    let drifts = diff(&[outbox()], &[found]);
    assert_eq!(
        drifts,
        [Drift::ColumnAdded {
            table: "jadpo_outbox".into(),
            column: "extra".into(),
            data_type: "integer".into()
        }]
    );
    assert_eq!(drifts[0].to_string(), "column jadpo_outbox.extra (integer) is not in the snapshot");
}

#[test]
fn a_dropped_column_is_missing_and_names_its_item() {
    let mut found = outbox();
    found.columns.retain(|c| c.name != "note");
    let drifts = diff(&[outbox()], &[found]);
    assert_eq!(codes(&drifts), ["column_dropped"]);
    assert_eq!(drifts[0].missing_item().as_deref(), Some("jadpo_outbox.note"));
}

#[test]
fn a_column_of_the_same_shape_in_a_missing_ones_place_reads_as_renamed() {
    let mut found = outbox();
    found.columns[2].name = "remark".to_owned();
    let drifts = diff(&[outbox()], &[found]);
    assert_eq!(
        drifts,
        [Drift::ColumnRenamed {
            table: "jadpo_outbox".into(),
            from: "note".into(),
            to: "remark".into()
        }]
    );
}

#[test]
fn two_candidates_for_a_rename_stay_a_drop_and_two_adds() {
    let mut found = outbox();
    found.columns[2].name = "remark".to_owned();
    found.columns.push(column("other", "text", false));
    assert_eq!(
        codes(&diff(&[outbox()], &[found])),
        ["column_dropped", "column_added", "column_added"]
    );
}

#[test]
fn a_retyped_column_names_both_types() {
    let mut found = outbox();
    found.columns[1].data_type = "bytea".to_owned();
    let drifts = diff(&[outbox()], &[found]);
    assert_eq!(
        drifts,
        [Drift::ColumnRetyped {
            table: "jadpo_outbox".into(),
            column: "payload".into(),
            expected: "text".into(),
            found: "bytea".into()
        }]
    );
}

#[test]
fn nullability_defaults_and_primary_keys_are_compared() {
    let mut found = outbox();
    found.columns[2].not_null = true;
    found.columns[1].default = Some("''".to_owned());
    found.primary_key = vec!["payload".to_owned()];
    assert_eq!(
        codes(&diff(&[outbox()], &[found])),
        ["column_default", "column_nullability", "primary_key"],
        "columns in their table's order, then the key"
    );
}

#[test]
fn indexes_missing_added_and_changed_are_found() {
    let mut dropped = outbox();
    dropped.indexes.clear();
    assert_eq!(codes(&diff(&[outbox()], &[dropped.clone()])), ["index_missing"]);
    assert_eq!(codes(&diff(&[dropped], &[outbox()])), ["index_added"]);
    let mut changed = outbox();
    changed.indexes[0].unique = true;
    assert_eq!(codes(&diff(&[outbox()], &[changed])), ["index_changed"]);
}

#[test]
fn tables_and_foreign_keys_missing_or_added_are_found() {
    assert_eq!(codes(&diff(&[outbox(), deliveries()], &[outbox()])), ["table_missing"]);
    assert_eq!(codes(&diff(&[outbox()], &[outbox(), deliveries()])), ["table_added"]);
    let mut loose = deliveries();
    loose.foreign_keys.clear();
    assert_eq!(codes(&diff(&[deliveries()], &[loose.clone()])), ["foreign_key_missing"]);
    assert_eq!(codes(&diff(&[loose], &[deliveries()])), ["foreign_key_added"]);
}

#[test]
fn a_snapshot_leaves_out_the_ledgers_sorts_its_tables_and_reads_back() {
    let ledger = TableSchema { name: "jadpo_migrations".into(), ..outbox() };
    let snapshot = Snapshot::new(
        "main",
        "sqlite",
        BTreeMap::from([("jadpo".to_owned(), 17)]),
        vec![outbox(), ledger, deliveries()],
    );
    let names: Vec<&str> = snapshot.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["jadpo_deliveries", "jadpo_outbox"]);
    let text = snapshot.to_text();
    assert!(text.ends_with("}\n"), "{text}");
    assert!(text.contains("\"type\":\"text\""), "columns carry their type as `type`: {text}");
    let mut wider = snapshot.clone();
    wider.tables[1].columns.push(column("extra", "text", false));
    let (before, after) = (text.lines().count(), wider.to_text().lines().count());
    assert_eq!(after, before + 1, "a column more is a line more:\n{}", wider.to_text());
    assert_eq!(Snapshot::parse(&text, "main.json").unwrap_or_else(|e| panic!("{e}")), snapshot);
}

#[test]
fn a_snapshot_of_another_format_or_version_or_shape_is_refused() {
    let other = r#"{"format": "jadpo.manifest", "version": 1}"#;
    let Err(err) = Snapshot::parse(other, "x.json") else { panic!("another format was read") };
    assert!(err.to_string().contains("format \"jadpo.manifest\" version 1"), "{err}");
    let later = r#"{"format": "jadpo.snapshot", "version": 2}"#;
    assert!(matches!(Snapshot::parse(later, "x.json"), Err(SnapshotError::Unsupported { .. })));
    let broken = r#"{"format": "jadpo.snapshot", "version": 1, "store": "main"}"#;
    let Err(err) = Snapshot::parse(broken, "x.json") else { panic!("a partial file was read") };
    assert!(matches!(err, SnapshotError::Malformed { .. }), "{err}");
    assert!(Snapshot::parse("not json", "x.json").is_err());
}

#[test]
fn provenance_names_the_first_migration_that_made_each_item() {
    use crate::migrate::{Ledger, Migration};
    let jp = |v: u32, name: &str, sql: &str| Migration::new(Ledger::Jadpo, v, name, sql);
    let catalog = crate::migrate::MigrationCatalog::builtin(
        crate::dialect::Dialect::Sqlite,
        vec![],
        vec![
            jp(
                1,
                "pipeline",
                "CREATE TABLE jadpo_outbox (id TEXT PRIMARY KEY, payload TEXT);\n\
                               CREATE INDEX outbox_payload_idx ON jadpo_outbox (payload);",
            ),
            jp(18, "encodings", "ALTER TABLE jadpo_outbox ADD COLUMN note TEXT;"),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let provenance = provenance(&catalog);
    let first = ("jadpo".to_owned(), 1, "pipeline".to_owned());
    let later = ("jadpo".to_owned(), 18, "encodings".to_owned());
    assert_eq!(made_by(&provenance, "jadpo_outbox"), Some(&first));
    assert_eq!(made_by(&provenance, "jadpo_outbox.payload"), Some(&first));
    assert_eq!(made_by(&provenance, "jadpo_outbox.note"), Some(&later));
    assert_eq!(made_by(&provenance, "jadpo_outbox:outbox_payload_idx"), Some(&first));
    assert_eq!(made_by(&provenance, "jadpo_outbox:jadpo_outbox_pkey"), Some(&first), "its table's");
    assert_eq!(made_by(&provenance, "jadpo_other.x"), None);
    let mut dropped = outbox();
    dropped.columns.retain(|c| c.name != "note");
    let drift = diff(&[outbox()], &[dropped]);
    let item = drift[0].missing_item().unwrap_or_default();
    assert_eq!(made_by(&provenance, &item), Some(&later));
}
