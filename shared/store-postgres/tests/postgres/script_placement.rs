//! `jadpo migrate sql`'s script under a placement: run on an empty database it makes what
//! `migrate apply` makes for the same features; run again for more features it gives the
//! migrations it recorded the statements of those features, as `apply` does; and either way a
//! second run of the same script changes nothing.

use std::collections::BTreeSet;

use jadpo_core::TransactionalStore;
use jadpo_engine::migrate;
use jadpo_schema::migrate::MigrationCatalog;
use jadpo_schema::placement::Feature;
use jadpo_store_postgres::{builtin_catalog, schema_sql};
use jadpo_test_harness::PgTestDb;

fn placed(features: &[Feature]) -> MigrationCatalog {
    let set: BTreeSet<Feature> = features.iter().copied().collect();
    builtin_catalog().with_placement(set).unwrap_or_else(|e| panic!("{e}"))
}

fn script(catalog: &MigrationCatalog) -> String {
    schema_sql(catalog, &[], &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// Every table of `public` and the ledger's (version, features) rows.
async fn shape(db: &PgTestDb) -> (Vec<String>, Vec<String>) {
    let store = db.store();
    let tables = "SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1";
    let rows = store.query_once(tables, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let tables = rows.iter().map(|r| r.get_str("t").unwrap_or_default().to_owned()).collect();
    let ledger = "SELECT version || ' ' || COALESCE(features, 'all') AS l FROM jadpo_migrations \
                  WHERE ledger = 'jadpo' ORDER BY version";
    let rows = store.query_once(ledger, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    (tables, rows.iter().map(|r| r.get_str("l").unwrap_or_default().to_owned()).collect())
}

#[tokio::test]
async fn the_script_places_tables_as_apply_does_and_runs_further_for_a_feature_placed_later() {
    let few = placed(&[Feature::Pipeline, Feature::Housekeeping]);
    let more = placed(&[Feature::Pipeline, Feature::Housekeeping, Feature::Flags, Feature::Audit]);
    let (scripted, applied) = (PgTestDb::empty().await, PgTestDb::empty().await);

    for _ in 0..2 {
        scripted.run_script(&script(&few)).await;
    }
    migrate::apply(&applied.store(), &few).await.unwrap_or_else(|e| panic!("{e}"));
    let (tables, ledger) = shape(&scripted).await;
    assert_eq!((tables.clone(), ledger.clone()), shape(&applied).await, "the same database");
    assert!(
        tables.contains(&"jadpo_outbox".to_owned()) && !tables.contains(&"jadpo_flags".to_owned())
    );
    assert!(ledger.iter().all(|l| l.ends_with(" pipeline,housekeeping")), "{ledger:?}");

    for _ in 0..2 {
        scripted.run_script(&script(&more)).await;
    }
    let report = migrate::apply(&applied.store(), &more).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!report.extended.is_empty(), "{report:?}");
    let (tables, ledger) = shape(&scripted).await;
    let (by_apply, ledger_by_apply) = shape(&applied).await;
    assert_eq!(tables, by_apply, "the same tables after the feature was placed");
    for table in ["jadpo_flags", "jadpo_flag_changes", "jadpo_audit"] {
        assert!(tables.contains(&table.to_owned()), "{table}: {tables:?}");
    }
    // The script records the features as it found them, in its own order; the sets agree.
    let sets = |ledger: &[String]| -> Vec<BTreeSet<String>> {
        ledger
            .iter()
            .map(|l| {
                l.split_once(' ').map_or("", |(_, f)| f).split(',').map(str::to_owned).collect()
            })
            .collect()
    };
    assert_eq!(sets(&ledger), sets(&ledger_by_apply), "{ledger:?} / {ledger_by_apply:?}");
    assert!(sets(&ledger).iter().any(|f| f.contains("flags")), "{ledger:?}");
    let again = migrate::apply(&scripted.store(), &more).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        again.applied.is_empty() && again.extended.is_empty(),
        "apply after the script: {again:?}"
    );
}
