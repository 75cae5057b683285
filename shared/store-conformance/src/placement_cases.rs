//! Placement: a store's migrations create the system tables of the features its declaration
//! places there and no others; a feature placed later gets its tables on the next apply; a
//! database made before placement (every table in every store) keeps working as it is.
//!
//! Each case migrates the fixture's one database as one store of a two-store application: `main`
//! (users, schedules, flags, an audited entity, a workflow) and `warehouse` (a subscriber that
//! calls a connection, nothing else).

use std::collections::BTreeSet;
use std::sync::Arc;

use jadpo_application::{
    AppError, Application, ApplicationBuilder, Capability, CapabilityContext, CommandRequest,
    Event, HandlerContext, HandlerError, RetryPolicy, Subscriber, UserEntity,
};
use jadpo_core::model::audit::AuditSpec;
use jadpo_core::model::flags::Rollout;
use jadpo_core::{Dialect, Store};
use jadpo_engine::migrate;
use jadpo_schedule::Schedule;
use jadpo_workflow::def::{Node, WorkflowDef};

use crate::Fixture;
use crate::cases::ok;

struct Nothing;

#[async_trait::async_trait]
impl Subscriber for Nothing {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        Ok(())
    }
}

#[async_trait::async_trait]
impl Capability for Nothing {
    async fn run(
        &self,
        _: &mut CapabilityContext<'_>,
        _: &CommandRequest,
    ) -> Result<serde_json::Value, HandlerError> {
        Ok(serde_json::Value::Null)
    }
}

fn checkout() -> WorkflowDef {
    let charge = Node::Capability {
        capability: "charge".to_owned(),
        inputs: vec![],
        idempotency_key: None,
        output: "payment".to_owned(),
        next: "done".to_owned(),
        on_failure: None,
        compensate: None,
    };
    let def = WorkflowDef::builder("checkout", "1", "charge").node("charge", charge);
    ok(def.node("done", Node::Complete).build(), "the workflow")
}

/// The two stores, everything but where flags live; `flags_in` names their store.
fn declaration(flags_in: Option<&str>) -> ApplicationBuilder {
    let builder = Application::builder("placed")
        .store("main")
        .store("warehouse")
        .event("order.placed")
        .connection("mailer")
        .users(UserEntity::new("customer", "main", "customers"))
        .audit(AuditSpec::new("order", "main", "orders", &["status"]))
        .schedule(Schedule::every("tick", std::time::Duration::from_secs(60), "order.placed"))
        .schedules_store("main")
        .workflow(checkout(), "main")
        .capability("charge", Nothing)
        .subscriber_via(
            "reserve",
            "order.placed",
            "warehouse",
            RetryPolicy::default(),
            "mailer",
            Nothing,
        );
    match flags_in {
        Some(store) => builder.flag("beta", Rollout::Off).flags_store(store),
        None => builder,
    }
}

/// The two-store application, with flags in `flags_in` (none without).
pub fn app(flags_in: Option<&str>) -> Application {
    ok(declaration(flags_in).build(), "the declaration")
}

fn placed_tables(app: &Application, store: &str, dialect: Dialect) -> BTreeSet<String> {
    app.placed_tables(store, dialect).into_iter().map(str::to_owned).collect()
}

async fn jadpo_tables(store: &dyn Store) -> BTreeSet<String> {
    let tables = ok(store.schema_tables().await, "tables");
    tables.into_iter().filter(|t| t.starts_with("jadpo_") && t != "jadpo_migrations").collect()
}

/// Migrates the fixture's database as `store` of `app`.
async fn migrate_as(
    fx: &dyn Fixture,
    app: &Application,
    name: &str,
) -> (Arc<dyn Store>, jadpo_schema::migrate::ApplyReport) {
    let store = fx.open();
    let catalog = ok(
        ok(store.migration_catalog().with_app_migrations(vec![]), "catalog")
            .with_placement(app.store_features(name)),
        "placement",
    );
    let report = ok(migrate::apply(store.as_ref(), &catalog).await, "migrate apply");
    (store, report)
}

/// `warehouse` holds the pipeline, housekeeping and step records only; `main` everything else
/// it is given, and neither what the other holds alone.
async fn each_store_gets_only_what_is_placed_there(fx: &dyn Fixture, name: &str) {
    let app = app(Some("main"));
    let (store, _) = migrate_as(fx, &app, name).await;
    let found = jadpo_tables(store.as_ref()).await;
    let expected = placed_tables(&app, name, fx.dialect());
    assert_eq!(found, expected, "{} store {name}: its jadpo_ tables", fx.dialect());
    let workflow = ok(store.schema_table("workflow_executions").await, "describe");
    assert!(workflow.is_some(), "the workflow store is in every store");
}

pub async fn the_warehouse_gets_only_its_tables(fx: &dyn Fixture) {
    each_store_gets_only_what_is_placed_there(fx, "warehouse").await;
    let found = jadpo_tables(fx.open().as_ref()).await;
    for table in ["jadpo_outbox", "jadpo_steps", "jadpo_housekeeping"] {
        assert!(found.contains(table), "{table} in warehouse: {found:?}");
    }
    for table in ["jadpo_sessions", "jadpo_schedules", "jadpo_flags", "jadpo_audit"] {
        assert!(!found.contains(table), "{table} is not warehouse's: {found:?}");
    }
    let err = declaration(None).flag("beta", Rollout::Off).build().err();
    assert!(
        matches!(&err, Some(AppError::StoreNotNamed { feature: "flags", .. })),
        "with two stores, flags without a named store are refused: {err:?}"
    );
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains(".flags_store(\"<store>\")"), "{message}");
}

pub async fn the_main_store_gets_every_feature_it_holds(fx: &dyn Fixture) {
    each_store_gets_only_what_is_placed_there(fx, "main").await;
    let found = jadpo_tables(fx.open().as_ref()).await;
    for table in ["jadpo_sessions", "jadpo_schedules", "jadpo_flags", "jadpo_audit"] {
        assert!(found.contains(table), "{table} in main: {found:?}");
    }
    assert!(!found.contains("jadpo_steps"), "no subscriber of main calls a connection");
}

/// Flags moved to `warehouse`'s declaration: the next apply there creates their tables (and only
/// those), recorded in the ledger; the one after does nothing.
pub async fn a_feature_placed_later_gets_its_tables(fx: &dyn Fixture) {
    let (store, _) = migrate_as(fx, &app(None), "warehouse").await;
    assert!(!jadpo_tables(store.as_ref()).await.contains("jadpo_flags"));
    let later = app(Some("warehouse"));
    let (store, report) = migrate_as(fx, &later, "warehouse").await;
    assert!(report.applied.is_empty(), "nothing new to apply: {report:?}");
    let extended: Vec<u32> = report.extended.iter().map(|(_, v, _)| *v).collect();
    assert!(!extended.is_empty(), "the flags' migrations ran further: {report:?}");
    let found = jadpo_tables(store.as_ref()).await;
    assert_eq!(found, placed_tables(&later, "warehouse", fx.dialect()));
    assert!(found.contains("jadpo_flags") && found.contains("jadpo_flag_changes"), "{found:?}");
    let changes = ok(store.schema_table("jadpo_flag_changes").await, "describe");
    let columns: Vec<String> =
        changes.map(|t| t.columns.into_iter().map(|c| c.name).collect()).unwrap_or_default();
    assert!(
        columns.contains(&"os_account".to_owned()),
        "a later migration's column too: {columns:?}"
    );
    let applied = ok(store.migrations_applied().await, "ledger");
    let flags = jadpo_application::Feature::Flags;
    let ran_for_flags: Vec<u32> = applied
        .iter()
        .filter(|a| a.features.as_ref().is_some_and(|f| f.contains(&flags)))
        .map(|a| a.version)
        .collect();
    assert_eq!(ran_for_flags, extended, "the ledger records the flags where they ran");
    let (_, again) = migrate_as(fx, &later, "warehouse").await;
    assert!(again.applied.is_empty() && again.extended.is_empty(), "{again:?}");
}

/// A database migrated before placement holds every table in every store: it stays as it is,
/// nothing re-run, nothing dropped.
pub async fn a_database_made_whole_keeps_every_table(fx: &dyn Fixture) {
    let store = fx.open();
    ok(migrate::apply(store.as_ref(), &store.migration_catalog()).await, "migrate whole");
    let before = jadpo_tables(store.as_ref()).await;
    let (store, report) = migrate_as(fx, &app(Some("main")), "warehouse").await;
    assert!(report.applied.is_empty() && report.extended.is_empty(), "{report:?}");
    assert_eq!(jadpo_tables(store.as_ref()).await, before);
    assert!(before.contains("jadpo_flags"), "made whole: {before:?}");
}

/// A store made whole, its unplaced tables dropped on an operator's word: refused while one holds
/// a row; then gone, with the ledger narrowed, so that placing a feature there again makes its
/// tables anew (the audit trail's functions on PostgreSQL included).
pub async fn unplaced_tables_are_dropped_only_deliberately(fx: &dyn Fixture) {
    let store = fx.open();
    ok(migrate::apply(store.as_ref(), &store.migration_catalog()).await, "migrate whole");
    let warehouse = app(Some("main"));
    let catalog = |app: &Application| {
        let c = ok(store.migration_catalog().with_app_migrations(vec![]), "catalog");
        ok(c.with_placement(app.store_features("warehouse")), "placement")
    };
    let found = ok(migrate::unplaced(store.as_ref(), &catalog(&warehouse)).await, "unplaced");
    for table in ["jadpo_flags", "jadpo_sessions", "jadpo_schedules", "jadpo_audit"] {
        assert!(found.tables.iter().any(|t| t == table), "{table}: {found:?}");
    }
    assert!(!found.tables.iter().any(|t| t == "jadpo_outbox"), "placed: {found:?}");
    let functions = found.functions.iter().filter(|f| f.starts_with("jadpo_audit_")).count();
    assert_eq!(functions, if fx.dialect() == Dialect::Postgres { 4 } else { 0 }, "{found:?}");

    let insert = "INSERT INTO jadpo_flags (name, mode, percentage, updated_at, updated_by) \
                  VALUES ('beta', 'off', 0, $1, 'test')";
    let now = jadpo_core::SqlValue::Timestamp(chrono::Utc::now());
    ok(store.execute_once(insert, &[now]).await, "a flag row");
    let refused = migrate::drop_unplaced(store.as_ref(), &found).await.err().map(|e| e.to_string());
    assert!(refused.unwrap_or_default().contains("jadpo_flags holds rows: nothing was dropped"));
    assert!(jadpo_tables(store.as_ref()).await.contains("jadpo_sessions"), "nothing dropped");
    ok(store.execute_once("DELETE FROM jadpo_flags", &[]).await, "emptied");

    ok(migrate::drop_unplaced(store.as_ref(), &found).await, "drop");
    let left = jadpo_tables(store.as_ref()).await;
    assert_eq!(left, placed_tables(&warehouse, "warehouse", fx.dialect()), "only what is placed");
    let again = ok(migrate::apply(store.as_ref(), &catalog(&warehouse)).await, "re-apply");
    assert!(again.applied.is_empty() && again.extended.is_empty(), "{again:?}");

    let flags_here = app(Some("warehouse"));
    let report = ok(migrate::apply(store.as_ref(), &catalog(&flags_here)).await, "flags placed");
    assert!(!report.extended.is_empty(), "{report:?}");
    let now_there = jadpo_tables(store.as_ref()).await;
    assert_eq!(now_there, placed_tables(&flags_here, "warehouse", fx.dialect()));
    let with_audit = Application::builder("audited").store("warehouse").audit(AuditSpec::new(
        "order",
        "warehouse",
        "orders",
        &["status"],
    ));
    let with_audit = ok(with_audit.build(), "declaration");
    let c = ok(store.migration_catalog().with_app_migrations(vec![]), "catalog");
    let c = ok(c.with_placement(with_audit.store_features("warehouse")), "placement");
    ok(migrate::apply(store.as_ref(), &c).await, "the audit trail placed again");
    assert!(jadpo_tables(store.as_ref()).await.contains("jadpo_audit"));
}

/// A ledger made before it recorded features (no `features` column) reads as every feature run,
/// and the next migration session gives it the column, changing nothing else.
pub async fn a_ledger_older_than_features_gains_the_column(fx: &dyn Fixture) {
    let store = fx.open();
    ok(migrate::apply(store.as_ref(), &store.migration_catalog()).await, "migrate whole");
    ok(store.execute_once("ALTER TABLE jadpo_migrations DROP COLUMN features", &[]).await, "old");
    let applied = ok(store.migrations_applied().await, "read without the column");
    assert!(!applied.is_empty() && applied.iter().all(|a| a.features.is_none()), "{applied:?}");
    let before = jadpo_tables(store.as_ref()).await;
    let (store, report) = migrate_as(fx, &app(Some("main")), "warehouse").await;
    assert!(report.applied.is_empty() && report.extended.is_empty(), "{report:?}");
    let ledger = ok(store.schema_table("jadpo_migrations").await, "describe");
    assert!(ledger.is_some_and(|t| t.column("features").is_some()), "the column is added");
    assert_eq!(jadpo_tables(store.as_ref()).await, before);
}
