//! A crash at every boundary of a migration run — before a migration's transaction, after its
//! commit, before the unplaced tables are dropped — alone and in random sets, on both adapters,
//! over the runs a store goes through: its first apply under the declaration's placement, a
//! feature placed there later (the migrations run further), and its unplaced tables dropped.
//! However it crashes, the next run finishes the work: the store then holds exactly the tables
//! its declaration places there, the ledger records every migration once with the features it
//! ran for, and a further run changes nothing.
//!
//! Fault points are process-wide: the test holds `fail`'s scenario lock while it arms them.

use std::collections::BTreeSet;
use std::sync::Arc;

use jadpo_application::{
    Application, Event, HandlerContext, HandlerError, RetryPolicy, Subscriber,
};
use jadpo_core::model::flags::Rollout;
use jadpo_core::{Dialect, Store};
use jadpo_engine::migrate;
use jadpo_schema::migrate::MigrationCatalog;
use jadpo_test_env::{Kind, crash_loop_on_both, fails_after};
use jadpo_test_harness::{PgTestDb, SqliteTestDb};

const POINTS: &[&str] = &["migrate.before_step", "migrate.after_step", "migrate.before_drop"];

/// Runs per adapter, after each point alone.
const RANDOM: usize = 40;

struct Nothing;

#[async_trait::async_trait]
impl Subscriber for Nothing {
    async fn handle(&self, _: &mut HandlerContext<'_>, _: &Event) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// One store, `main`, with a subscriber calling a connection; with flags when `flags`.
fn app(flags: bool) -> Application {
    let builder = Application::builder("m")
        .store("main")
        .event("tick")
        .connection("mailer")
        .subscriber_via("s", "tick", "main", RetryPolicy::default(), "mailer", Nothing);
    let builder = if flags { builder.flag("beta", Rollout::Off) } else { builder };
    builder.build().unwrap_or_else(|e| panic!("{e}"))
}

fn catalog(store: &dyn Store, app: &Application) -> MigrationCatalog {
    let c = store.migration_catalog().with_app_migrations(vec![]).unwrap_or_else(|e| panic!("{e}"));
    c.with_placement(app.store_features("main")).unwrap_or_else(|e| panic!("{e}"))
}

fn placed(app: &Application, dialect: Dialect) -> BTreeSet<String> {
    app.placed_tables("main", dialect).into_iter().map(str::to_owned).collect()
}

async fn jadpo_tables(store: &dyn Store) -> Result<BTreeSet<String>, String> {
    let tables = store.schema_tables().await.map_err(|e| e.to_string())?;
    Ok(tables.into_iter().filter(|t| t.starts_with("jadpo_") && t != "jadpo_migrations").collect())
}

/// A fresh store of `kind`, kept alive by the returned guard.
async fn fresh(kind: Kind) -> (Arc<dyn Store>, Box<dyn std::any::Any>) {
    match kind {
        Kind::Sqlite => {
            let db = SqliteTestDb::empty();
            (Arc::new(db.store()), Box::new(db))
        }
        Kind::Postgres => {
            let db = PgTestDb::empty().await;
            (Arc::new(db.store()), Box::new(db))
        }
    }
}

/// What a store of `app` must hold after a clean run: its tables and a ledger that names each
/// migration once, with nothing left to run.
async fn settled(store: &dyn Store, app: &Application) -> Result<(), String> {
    let found = jadpo_tables(store).await?;
    let wanted = placed(app, store.dialect());
    if found != wanted {
        return Err(format!("tables {found:?}, placed {wanted:?}"));
    }
    let again = migrate::apply(store, &catalog(store, app)).await.map_err(|e| e.to_string())?;
    if !again.applied.is_empty() || !again.extended.is_empty() {
        return Err(format!("a run after the clean one still did something: {again:?}"));
    }
    let applied = store.migrations_applied().await.map_err(|e| e.to_string())?;
    let versions: BTreeSet<_> = applied.iter().map(|a| (a.ledger, a.version)).collect();
    if versions.len() != applied.len() || applied.len() != catalog(store, app).all().count() {
        return Err(format!(
            "the ledger has {} rows for {} versions",
            applied.len(),
            versions.len()
        ));
    }
    Ok(())
}

/// Arms `crash` (a point and when it fails), runs `work`, disarms.
async fn crashing<T, F: std::future::Future<Output = T>>(
    crash: &[(&'static str, String)],
    work: F,
) -> T {
    for (point, when) in crash {
        fail::cfg(*point, when.as_str()).unwrap_or_else(|e| panic!("{e}"));
    }
    let out = work.await;
    for (point, _) in crash {
        fail::remove(point);
    }
    out
}

async fn one_run(kind: Kind, crash: &[(&'static str, String)]) -> Result<(), String> {
    let (store, _guard) = fresh(kind).await;
    let s = store.as_ref();
    let (without, with) = (app(false), app(true));

    // The first apply, crashed, then run again clean.
    let _ = crashing(crash, migrate::apply(s, &catalog(s, &without))).await;
    migrate::apply(s, &catalog(s, &without)).await.map_err(|e| format!("first apply: {e}"))?;
    settled(s, &without).await.map_err(|e| format!("after the first apply: {e}"))?;

    // Flags placed later: the migrations run further, crashed, then clean.
    let _ = crashing(crash, migrate::apply(s, &catalog(s, &with))).await;
    migrate::apply(s, &catalog(s, &with)).await.map_err(|e| format!("flags placed: {e}"))?;
    settled(s, &with).await.map_err(|e| format!("after flags were placed: {e}"))?;

    // Flags removed again: their tables are unplaced; dropping them, crashed, then clean.
    let unplaced = migrate::unplaced(s, &catalog(s, &without)).await.map_err(|e| e.to_string())?;
    let _ = crashing(crash, migrate::drop_unplaced(s, &unplaced)).await;
    let left = migrate::unplaced(s, &catalog(s, &without)).await.map_err(|e| e.to_string())?;
    if !left.tables.is_empty() && left.tables != unplaced.tables {
        return Err(format!(
            "a crashed drop left part of it: {:?} of {:?}",
            left.tables, unplaced.tables
        ));
    }
    migrate::drop_unplaced(s, &left).await.map_err(|e| format!("drop: {e}"))?;
    settled(s, &without).await.map_err(|e| format!("after the drop: {e}"))?;

    // And placed once more: made anew.
    migrate::apply(s, &catalog(s, &with)).await.map_err(|e| format!("placed again: {e}"))?;
    settled(s, &with).await.map_err(|e| format!("after flags were placed again: {e}"))
}

async fn adapter(kind: Kind, mut rng: fastrand::Rng) -> Vec<String> {
    let mut failures = Vec::new();
    let alone = POINTS.iter().map(|p| vec![(*p, fails_after(0))]);
    let random: Vec<Vec<(&'static str, String)>> = (0..jadpo_test_env::sized(RANDOM))
        .map(|_| {
            let chosen: Vec<&'static str> = POINTS.iter().copied().filter(|_| rng.bool()).collect();
            chosen.into_iter().map(|p| (p, fails_after(rng.usize(..6)))).collect()
        })
        .collect();
    let mut runs = 0;
    for crash in alone.chain(random) {
        runs += 1;
        if let Err(e) = one_run(kind, &crash).await {
            failures.push(format!("{kind:?} at {crash:?}: {e}"));
        }
    }
    println!(
        "{kind:?}: {runs} runs, each a first apply, a feature placed later and a drop; {} lost or repeated",
        failures.len()
    );
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_migration_run_is_finished_by_the_next() {
    crash_loop_on_both(POINTS, adapter).await;
}
