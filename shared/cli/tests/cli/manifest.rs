//! `jadpo manifest`: the sample shop's manifest is the one committed beside these tests (a change
//! to the declaration shows in review as a change to that file), every node kind it documents is
//! there, each system table the migrations create is placed by a feature, and the summary for
//! people counts the nodes.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{jadpo_with, text};
use serde_json::Value;

const PINNED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/shop-manifest.json");

fn manifest() -> Value {
    let out = jadpo_with(None, &["manifest", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out)))
}

fn nodes<'a>(manifest: &'a Value, kind: &str) -> Vec<&'a Value> {
    let all = manifest["nodes"].as_array().map_or(&[][..], Vec::as_slice);
    all.iter().filter(|n| n["kind"] == kind).collect()
}

#[test]
fn the_shops_manifest_is_the_committed_one() {
    let got = manifest();
    if std::env::var_os("JADPO_BLESS").is_some() {
        let pretty = serde_json::to_string_pretty(&got).unwrap_or_default();
        std::fs::write(PINNED, pretty + "\n").unwrap_or_else(|e| panic!("{PINNED}: {e}"));
    }
    let pinned = std::fs::read_to_string(PINNED).unwrap_or_else(|e| panic!("{PINNED}: {e}"));
    let pinned: Value = serde_json::from_str(&pinned).unwrap_or_else(|e| panic!("{PINNED}: {e}"));
    assert_eq!(
        got, pinned,
        "the shop's manifest changed; if that is meant, run `JADPO_BLESS=1 cargo test -p \
         jadpo-cli --test manifest` and review the diff of {PINNED}"
    );
    assert_eq!(
        (&got["format"], &got["version"]),
        (&Value::from("jadpo.manifest"), &Value::from(1))
    );
    for kind in [
        "store",
        "action",
        "event",
        "subscriber",
        "connection",
        "schedule",
        "flag",
        "workflow",
        "user_entity",
        "service_entity",
        "audited_entity",
        "system_table",
    ] {
        assert!(!nodes(&got, kind).is_empty(), "no {kind} node in the shop's manifest");
    }
    let place_order = nodes(&got, "action").into_iter().find(|a| a["name"] == "place_order");
    let callers = place_order.map(|a| a["callers"].clone()).unwrap_or_default();
    assert_eq!(callers, serde_json::json!({"anyone": false, "users": true, "services": "any"}));
}

/// Each store holds the pipeline's tables; schedules and flags only in the store named for
/// them; sign-in beside the users; step records where the calling subscribers write.
#[test]
fn system_tables_are_placed_by_the_rules() {
    let got = manifest();
    let tables = nodes(&got, "system_table");
    let stores_of = |table: &str| -> Vec<&str> {
        let of = tables.iter().filter(|t| t["name"] == table);
        of.filter_map(|t| t["store"].as_str()).collect()
    };
    assert_eq!(stores_of("jadpo_outbox"), ["main", "warehouse"]);
    assert_eq!(stores_of("jadpo_schedules"), ["main"]);
    assert_eq!(stores_of("jadpo_flags"), ["main"]);
    assert_eq!(stores_of("jadpo_sessions"), ["main"]);
    // Only main's subscribers call out (`reserve_stock` in warehouse makes no call).
    assert_eq!(stores_of("jadpo_steps"), ["main"], "step records where calls are made");
    assert_eq!(stores_of("jadpo_step_records"), ["main"]);
    assert!(stores_of("jadpo_migrations").is_empty(), "the ledger is the runtime's own");
    let features: BTreeSet<&str> = tables.iter().filter_map(|t| t["feature"].as_str()).collect();
    assert!(features.contains("pipeline") && features.contains("schedules"), "{features:?}");
}

/// Every `jadpo_*` table a migration creates belongs to a feature that places it, so none is
/// left out of the manifest (and of the checks that read it); and every statement of every
/// shipped migration belongs to a feature, or to the workflow store, on both dialects.
#[test]
fn every_table_the_migrations_create_is_placed_by_a_feature() {
    let features = jadpo_application::Feature::ALL.iter().flat_map(|f| f.tables().iter().copied());
    let helpers = jadpo_application::SQLITE_ONLY.iter().map(|(table, _)| *table);
    let placed: BTreeSet<&str> = features.chain(helpers).collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut created = BTreeSet::new();
    for dialect in ["postgres", "sqlite"] {
        let entries = std::fs::read_dir(dir.join(dialect)).unwrap_or_else(|e| panic!("{e}"));
        for entry in entries.flatten() {
            let sql = std::fs::read_to_string(entry.path()).unwrap_or_default();
            for word in sql.split("CREATE TABLE").skip(1) {
                let name = word.trim_start().trim_start_matches("IF NOT EXISTS").trim_start();
                let name: String =
                    name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                // A table made to take another's place (renamed to it in the same migration).
                let renamed = sql.contains(&format!("ALTER TABLE {name} RENAME TO"));
                if name.starts_with("jadpo_") && !renamed {
                    created.insert(name);
                }
            }
        }
    }
    assert!(created.len() > 10, "the migrations were not read: {created:?}");
    for catalog in [jadpo_store_postgres::builtin_catalog(), jadpo_runtime_sqlite_catalog()] {
        let attributed = catalog.with_placement(BTreeSet::new());
        assert!(attributed.is_ok(), "{:?}", attributed.err());
    }
    let unplaced: Vec<&String> = created.iter().filter(|t| !placed.contains(t.as_str())).collect();
    assert!(unplaced.is_empty(), "created by a migration, placed by no feature: {unplaced:?}");
}

#[test]
fn the_summary_counts_the_nodes_by_kind() {
    let out = jadpo_with(None, &["manifest"]);
    assert!(out.status.success(), "{}", text(&out));
    let summary = String::from_utf8_lossy(&out.stdout);
    let tables = nodes(&manifest(), "system_table").len();
    assert!(summary.contains(&format!("{tables:>3} system_table")), "{summary}");
    assert!(summary.starts_with("application shop (manifest version 1)"), "{summary}");
}

/// SQLite's built-in catalog, through a scratch store of the runtime (the CLI links SQLite only
/// through it).
fn jadpo_runtime_sqlite_catalog() -> jadpo_schema::migrate::MigrationCatalog {
    let scratch = jadpo_runtime_sqlite::scratch("main").unwrap_or_else(|e| panic!("{e}"));
    scratch.store().migration_catalog()
}
