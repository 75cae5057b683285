//! The conformance cases. Each takes a [`Fixture`] on an empty database and panics on failure.

use std::collections::BTreeSet;
use std::sync::Arc;

use jadpo_core::{Dialect, SqlValue, Store, StoreErrorKind};
use jadpo_engine::migrate;
use jadpo_schema::migrate::{Ledger, MigrateError, Migration, MigrationCatalog};
use jadpo_schema::table::TableSchema;
use serde_json::json;

use crate::Fixture;
use crate::spec::{self, SpecTable};

pub(crate) fn ok<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Runs `work` once per store, each on an operating-system thread of its own (with a runtime of
/// its own) over the store's own connection, all released together behind a barrier, so that
/// they race for real on both adapters; returns their results in the stores' order.
///
/// Threads, not tasks: SQLite's calls run without yielding, and a task woken by a barrier may
/// wait in the slot of a worker that is running another racer, so tasks raced one after the
/// other there.
pub(crate) async fn race<T, F, Fut>(stores: Vec<Arc<dyn Store>>, work: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize, Arc<dyn Store>) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let barrier = Arc::new(std::sync::Barrier::new(stores.len()));
    let threads: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            let (barrier, run) = (Arc::clone(&barrier), work(i, store));
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
                let runtime = ok(runtime, "a racer's runtime");
                barrier.wait();
                runtime.block_on(run)
            })
        })
        .collect();
    let joined = tokio::task::spawn_blocking(move || {
        threads.into_iter().map(|t| t.join().map_err(|_| "a racer panicked")).collect::<Vec<_>>()
    });
    let joined = ok(joined.await, "joining the racers");
    joined.into_iter().map(|r| ok(r, "a racing thread")).collect()
}

pub(crate) async fn migrated(fx: &dyn Fixture) -> Arc<dyn Store> {
    let store = fx.open();
    let catalog = store.migration_catalog();
    ok(migrate::apply(store.as_ref(), &catalog).await, "migrate apply");
    store
}

fn app_migration(version: u32, name: &str, sql: &str) -> Migration {
    Migration::new(Ledger::Workflow, version, name, sql)
}

fn next_version(catalog: &MigrationCatalog) -> u32 {
    catalog.all().filter(|m| m.ledger == Ledger::Workflow).map(|m| m.version).max().unwrap_or(0) + 1
}

async fn table_exists(store: &dyn Store, table: &str) -> bool {
    ok(store.schema_table(table).await, "describe table").is_some()
}

pub(crate) async fn count(store: &dyn Store, sql: &str) -> i64 {
    let mut tx = ok(store.begin().await, "begin");
    let row = ok(tx.query_one(sql, &[]).await, sql);
    ok(tx.rollback().await, "rollback");
    ok(row.get_i64("n"), "count column")
}

/// Every built-in migration applies to an empty database and creates the spec's tables.
pub async fn migrations_on_an_empty_database(fx: &dyn Fixture) {
    let store = fx.open();
    let catalog = store.migration_catalog();
    let report = ok(migrate::apply(store.as_ref(), &catalog).await, "migrate apply");
    let expected: Vec<_> = catalog.all().map(|m| (m.ledger, m.version, m.name.clone())).collect();
    assert_eq!(report.applied, expected);
    assert!(report.adopted.is_empty());
    for table in spec::workflow_tables(fx.dialect()) {
        assert!(table_exists(store.as_ref(), table.name).await, "{} missing", table.name);
    }
    let expected_versions = match fx.dialect() {
        Dialect::Sqlite => 3,
        Dialect::Postgres => 4,
    };
    assert_eq!(catalog.builtin_workflow_count(), expected_versions);
}

/// Applying again changes nothing: no migration runs and the ledgers keep their rows.
pub async fn reapplying_is_a_no_op(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let before = ok(store.migrations_applied().await, "ledger");
    let catalog = store.migration_catalog();
    let again = ok(migrate::apply(fx.open().as_ref(), &catalog).await, "second apply");
    assert!(again.applied.is_empty() && again.adopted.is_empty(), "{again:?}");
    assert_eq!(ok(store.migrations_applied().await, "ledger"), before);
}

/// Both ledgers record each migration, with this build's checksums.
pub async fn ledgers_record_every_migration(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let catalog = store.migration_catalog();
    let applied = ok(store.migrations_applied().await, "ledger");
    assert_eq!(applied.len(), catalog.all().count());
    for (a, m) in applied.iter().zip(catalog.all()) {
        assert_eq!((a.ledger, a.version), (m.ledger, m.version));
        assert_eq!(a.checksum.as_deref(), Some(m.checksum().as_str()), "{}", m.name);
    }
    let workflow =
        count(store.as_ref(), "SELECT count(*) AS n FROM invariant_schema_migrations").await;
    assert_eq!(Ok(workflow), i64::try_from(catalog.builtin_workflow_count()));
    let sums = count(
        store.as_ref(),
        "SELECT count(*) AS n FROM jadpo_migrations WHERE ledger = 'workflow' AND length(checksum) = 64",
    )
    .await;
    assert_eq!(sums, workflow);
    if fx.dialect() == Dialect::Postgres {
        let mut tx = ok(store.begin().await, "begin");
        let rows = ok(
            tx.query("SELECT description FROM invariant_schema_migrations ORDER BY version", &[])
                .await,
            "descriptions",
        );
        let names: Vec<_> =
            rows.iter().map(|r| ok(r.get_str("description"), "description").to_owned()).collect();
        let expected: Vec<_> = catalog
            .all()
            .filter(|m| m.ledger == Ledger::Workflow)
            .map(|m| m.name.clone())
            .collect();
        assert_eq!(names, expected);
    }
}

/// Status lists every migration as pending on an empty database, then as applied.
pub async fn status_lists_pending_then_applied(fx: &dyn Fixture) {
    let store = fx.open();
    let catalog = store.migration_catalog();
    let before = ok(migrate::status(store.as_ref(), &catalog).await, "status");
    assert_eq!(before.len(), catalog.all().count());
    assert!(before.iter().all(|s| s.state.label() == "pending"), "{before:?}");
    assert!(
        !table_exists(store.as_ref(), "jadpo_migrations").await,
        "status must not create ledgers"
    );
    ok(migrate::apply(store.as_ref(), &catalog).await, "apply");
    let after = ok(migrate::status(store.as_ref(), &catalog).await, "status");
    assert!(after.iter().all(|s| s.state.label() == "applied"), "{after:?}");
}

/// A database whose only ledger is the specification's (another tool made it) lists those
/// versions as `unverified`, not `pending`, and `apply` adopts them without running them again.
pub async fn a_spec_only_ledger_is_unverified_then_adopted(fx: &dyn Fixture) {
    let store = fx.open();
    let catalog = store.migration_catalog();
    let v1 = catalog.all().next().map(|m| m.sql.clone()).unwrap_or_default();
    let ledger = match fx.dialect() {
        Dialect::Sqlite => {
            "CREATE TABLE invariant_schema_migrations (version INTEGER PRIMARY KEY, \
             applied_at INTEGER NOT NULL); \
             INSERT INTO invariant_schema_migrations (version, applied_at) VALUES (1, 0)"
        }
        Dialect::Postgres => {
            "CREATE TABLE invariant_schema_migrations (version INTEGER PRIMARY KEY, \
             description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT NOW()); \
             INSERT INTO invariant_schema_migrations (version, description) VALUES (1, 'initial')"
        }
    };
    let mut tx = ok(store.begin().await, "begin");
    ok(tx.batch(&v1).await, "the specification's v1");
    ok(tx.batch(ledger).await, "the specification's ledger");
    ok(tx.commit().await, "commit");
    let status = ok(migrate::status(store.as_ref(), &catalog).await, "status");
    let labels: Vec<_> = status.iter().map(|s| (s.ledger, s.version, s.state.label())).collect();
    assert_eq!(labels.first(), Some(&(Ledger::Workflow, 1, "unverified")), "{labels:?}");
    assert!(labels.iter().skip(1).all(|(_, _, l)| *l == "pending"), "{labels:?}");
    let report = ok(migrate::apply(store.as_ref(), &catalog).await, "apply");
    assert_eq!(report.adopted.len(), 1, "{report:?}");
    let after = ok(migrate::status(store.as_ref(), &catalog).await, "status");
    assert!(after.iter().all(|s| s.state.label() == "applied"), "{after:?}");
}

/// A database made before either ledger existed — the workflow tables there (PostgreSQL's
/// without `cancellation_state`), a Session in them, no ledger at all — is taken over by
/// `apply`: on SQLite the versions whose tables and columns are there are adopted rather than
/// run again, on PostgreSQL the first version's idempotent DDL adds what is missing; the Session
/// stays and every migration ends applied.
pub async fn a_pre_ledger_database_is_taken_over_with_its_rows(fx: &dyn Fixture) {
    let store = fx.open();
    let catalog = store.migration_catalog();
    let v1 = catalog.all().next().map(|m| m.sql.clone()).unwrap_or_default();
    let (older, session) = match fx.dialect() {
        Dialect::Sqlite => (
            "SELECT 1",
            "INSERT INTO sessions (id, user_id, created_at, updated_at) VALUES ('s-old', 'u', 0, 0)",
        ),
        Dialect::Postgres => (
            "ALTER TABLE workflow_executions DROP COLUMN cancellation_state",
            "INSERT INTO sessions (id, user_id, created_at, updated_at) \
             VALUES ('s-old', 'u', now(), now())",
        ),
    };
    let mut tx = ok(store.begin().await, "begin");
    ok(tx.batch(&v1).await, "the tables of a pre-ledger release");
    ok(tx.batch(older).await, "as that release made them");
    ok(tx.batch(session).await, "a Session of then");
    ok(tx.commit().await, "commit");
    assert!(!table_exists(store.as_ref(), "invariant_schema_migrations").await);
    let report =
        ok(migrate::apply(store.as_ref(), &catalog).await, "apply on a pre-ledger database");
    let adopted = match fx.dialect() {
        Dialect::Sqlite => 1,
        Dialect::Postgres => 0,
    };
    assert_eq!(report.adopted.len(), adopted, "{report:?}");
    let after = ok(migrate::status(store.as_ref(), &catalog).await, "status");
    assert!(after.iter().all(|s| s.state.label() == "applied"), "{after:?}");
    let kept = count(store.as_ref(), "SELECT count(*) AS n FROM sessions WHERE id = 's-old'").await;
    assert_eq!(kept, 1, "the pre-ledger Session was lost");
    // Written after the migration, the Session of then is under compare-and-set as any other:
    // a write at its revision lands and moves it on; a second from the same read is refused.
    let then = ok(store.session_get("s-old").await, "read").unwrap_or_else(|| panic!("s-old"));
    let at = chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default();
    let patch = json!({"lang": "fr"});
    let written =
        jadpo_engine::workflow::session::update_context(store.as_ref(), &then, &patch, at);
    let written = ok(written.await, "a write at its revision");
    assert_eq!(written.revision, then.revision + 1, "the revision moved on");
    let again = jadpo_engine::workflow::session::update_context(store.as_ref(), &then, &patch, at);
    assert!(
        matches!(again.await, Err(jadpo_engine::workflow::session::SessionError::Stale(_))),
        "a write from a stale read of the legacy Session landed"
    );
    if fx.dialect() == Dialect::Postgres {
        let added = count(
            store.as_ref(),
            "SELECT count(*) AS n FROM information_schema.columns \
             WHERE table_name = 'workflow_executions' AND column_name = 'cancellation_state'",
        )
        .await;
        assert_eq!(added, 1, "cancellation_state was not added");
    }
}

/// A migration whose text changed after it was applied is refused before anything else runs.
pub async fn an_edited_migration_is_refused_and_nothing_runs(fx: &dyn Fixture) {
    let store = fx.open();
    let base = store.migration_catalog();
    let v = next_version(&base);
    let original = app_migration(v, "app_notes", "CREATE TABLE app_notes (id INTEGER PRIMARY KEY)");
    let first = ok(base.clone().with_app_migrations(vec![original]), "catalog");
    ok(migrate::apply(store.as_ref(), &first).await, "apply");
    let edited = vec![
        app_migration(v, "app_notes", "CREATE TABLE app_notes (id INTEGER PRIMARY KEY, body TEXT)"),
        app_migration(v + 1, "app_more", "CREATE TABLE app_more (id INTEGER PRIMARY KEY)"),
    ];
    let second = ok(base.with_app_migrations(edited), "catalog");
    let err = migrate::apply(store.as_ref(), &second).await.err();
    match &err {
        Some(MigrateError::ChecksumMismatch { version, name, .. }) => {
            assert_eq!((*version, name.as_str()), (v, "app_notes"));
        }
        other => panic!("expected a checksum mismatch, got {other:?}"),
    }
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("was edited after it was applied"), "{message}");
    assert!(!table_exists(store.as_ref(), "app_more").await, "a later migration ran");
    let status = ok(migrate::status(store.as_ref(), &second).await, "status");
    let labels: Vec<_> = status
        .iter()
        .filter(|s| s.ledger == Ledger::Workflow)
        .rev()
        .take(2)
        .map(|s| s.state.label())
        .collect();
    assert_eq!(labels, vec!["pending", "changed"]);
}

/// The application's own migrations are applied after the built-ins, in the workflow ledger.
pub async fn application_migrations_follow_the_builtins(fx: &dyn Fixture) {
    let store = fx.open();
    let base = store.migration_catalog();
    let v = next_version(&base);
    let app = app_migration(
        v,
        "application_metadata",
        "CREATE TABLE application_metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    );
    let catalog = ok(base.with_app_migrations(vec![app]), "catalog");
    let report = ok(migrate::apply(store.as_ref(), &catalog).await, "apply");
    let workflow_last = report.applied.iter().rfind(|(l, _, _)| *l == Ledger::Workflow);
    assert_eq!(workflow_last, Some(&(Ledger::Workflow, v, "application_metadata".to_owned())));
    assert!(table_exists(store.as_ref(), "application_metadata").await);
    let n = count(
        store.as_ref(),
        &format!("SELECT count(*) AS n FROM invariant_schema_migrations WHERE version = {v}"),
    )
    .await;
    assert_eq!(n, 1);
}

/// A migration that fails rolls back alone: earlier ones stay applied, it is not recorded.
pub async fn a_failing_migration_rolls_back_alone(fx: &dyn Fixture) {
    let store = fx.open();
    let base = store.migration_catalog();
    let v = next_version(&base);
    let apps = vec![
        app_migration(v, "good", "CREATE TABLE app_good (id INTEGER PRIMARY KEY)"),
        app_migration(v + 1, "bad", "CREATE TABLE app_half (id INTEGER); THIS IS NOT SQL"),
    ];
    let catalog = ok(base.with_app_migrations(apps), "catalog");
    let err = migrate::apply(store.as_ref(), &catalog).await.err().map(|e| e.to_string());
    let err = err.unwrap_or_else(|| panic!("a broken migration applied"));
    assert!(err.contains(&format!("workflow migration {} (bad) failed", v + 1)), "{err}");
    assert!(table_exists(store.as_ref(), "app_good").await);
    assert!(!table_exists(store.as_ref(), "app_half").await, "the failed migration left a table");
    let status = ok(migrate::status(store.as_ref(), &catalog).await, "status");
    let last: Vec<_> = status
        .iter()
        .filter(|s| s.ledger == Ledger::Workflow)
        .rev()
        .take(2)
        .map(|s| s.state.label())
        .collect();
    assert_eq!(last, vec!["pending", "applied"]);
}

/// Two applies at once, each on a worker thread of its own with its own store handle, released
/// together: their runs overlap in time (shown by their start and end instants) and every
/// migration is applied once, by one of them. On PostgreSQL the session's advisory lock makes
/// one apply everything and the other find nothing to do; SQLite takes its lock (`BEGIN
/// IMMEDIATE`) per migration, so there the two share the work, each skipping what the other
/// recorded, in the catalog's order.
pub async fn concurrent_applies_apply_once(fx: &dyn Fixture) {
    let catalog = fx.open().migration_catalog();
    let runs = race(vec![fx.open(), fx.open()], |_, store| {
        let catalog = catalog.clone();
        async move {
            let started = std::time::Instant::now();
            let result = migrate::apply(store.as_ref(), &catalog).await.map_err(|e| e.to_string());
            (started, std::time::Instant::now(), result)
        }
    })
    .await;
    let [(start_a, end_a, ra), (start_b, end_b, rb)] =
        <[_; 2]>::try_from(runs).unwrap_or_else(|_| panic!("two applies ran"));
    assert!(start_a < end_b && start_b < end_a, "the two applies ran one after the other");
    let (ra, rb) = (ok(ra, "first apply"), ok(rb, "second apply"));
    let total = ra.applied.len() + rb.applied.len();
    assert_eq!(total, catalog.all().count(), "{ra:?} {rb:?}");
    let twice: Vec<_> = ra.applied.iter().filter(|m| rb.applied.contains(m)).collect();
    assert!(twice.is_empty(), "applied by both: {twice:?}");
    if fx.dialect() == Dialect::Postgres {
        assert!(ra.applied.is_empty() || rb.applied.is_empty(), "both applied: {ra:?} {rb:?}");
    }
}

fn compare_table(dialect: Dialect, spec: &SpecTable, actual: &TableSchema) {
    let t = spec.name;
    let expected: BTreeSet<&str> = spec.columns.iter().map(|c| c.0).collect();
    let found: BTreeSet<&str> = actual.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(found, expected, "{t}: columns");
    for (name, ty, not_null, default) in &spec.columns {
        let Some(col) = actual.column(name) else {
            continue;
        };
        assert_eq!(col.data_type, spec::printed_type(dialect, ty), "{t}.{name}: type");
        if !spec.primary_key.contains(name) {
            assert_eq!(col.not_null, *not_null, "{t}.{name}: NOT NULL");
        }
        let printed = col.default.as_deref().map(spec::normalized_default);
        assert_eq!(printed.as_deref(), *default, "{t}.{name}: default");
    }
    assert_eq!(actual.primary_key, spec.primary_key, "{t}: primary key");
    let cascades: BTreeSet<(String, String, String, String)> = actual
        .foreign_keys
        .iter()
        .map(|f| {
            (
                f.columns.join(","),
                f.references_table.clone(),
                f.references_columns.join(","),
                f.on_delete.clone(),
            )
        })
        .collect();
    let wanted: BTreeSet<(String, String, String, String)> = spec
        .cascades
        .iter()
        .map(|(c, rt, rc)| {
            ((*c).to_owned(), (*rt).to_owned(), (*rc).to_owned(), "CASCADE".to_owned())
        })
        .collect();
    assert_eq!(cascades, wanted, "{t}: foreign keys");
    for unique in spec.unique {
        assert!(
            actual.indexes.iter().any(|i| i.unique && i.columns == *unique),
            "{t}: no unique ({})",
            unique.join(", ")
        );
    }
    for leading in spec.indexed {
        assert!(
            actual.indexes.iter().any(|i| i
                .columns
                .starts_with(&leading.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())),
            "{t}: no index on ({})",
            leading.join(", ")
        );
    }
}

/// Every workflow table's columns, types, nullability, defaults, keys, cascades and indexes are
/// the spec's physical reference for the dialect.
pub async fn workflow_schema_matches_the_spec(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    for table in spec::workflow_tables(fx.dialect()) {
        let actual = ok(store.schema_table(table.name).await, "describe");
        let actual = actual.unwrap_or_else(|| panic!("{} missing", table.name));
        compare_table(fx.dialect(), &table, &actual);
    }
}

/// `invariant_schema_migrations` has the dialect's shape from the spec.
pub async fn ledger_tables_have_the_specs_shape(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let spec = spec::ledger_table(fx.dialect());
    let actual =
        ok(store.schema_table(spec.name).await, "describe").unwrap_or_else(|| panic!("no ledger"));
    compare_table(fx.dialect(), &spec, &actual);
    let ours = ok(store.schema_table("jadpo_migrations").await, "describe");
    let ours = ours.unwrap_or_else(|| panic!("no jadpo_migrations"));
    assert_eq!(ours.primary_key, vec!["ledger".to_owned(), "version".to_owned()]);
}

const INSERT_SESSION: &str =
    "INSERT INTO sessions (id, user_id, created_at, updated_at) VALUES ($1, $2, $3, $3)";

pub(crate) fn now_value() -> SqlValue {
    SqlValue::Timestamp(chrono_now())
}

pub(crate) fn chrono_now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(1_767_225_600_123).unwrap_or_default()
}

async fn insert_session(tx: &mut dyn jadpo_core::Transaction, id: &str) {
    let params = [id.into(), "user-1".into(), now_value()];
    assert_eq!(ok(tx.execute(INSERT_SESSION, &params).await, "insert session"), 1);
}

async fn sessions(store: &dyn Store) -> i64 {
    count(store, "SELECT count(*) AS n FROM sessions").await
}

/// A committed transaction's writes are visible to a new transaction.
pub async fn commit_makes_writes_visible(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    insert_session(tx.as_mut(), "s1").await;
    ok(tx.commit().await, "commit");
    assert_eq!(sessions(fx.open().as_ref()).await, 1);
}

/// A rolled-back transaction's writes are gone.
pub async fn rollback_discards_writes(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    insert_session(tx.as_mut(), "s1").await;
    ok(tx.rollback().await, "rollback");
    assert_eq!(sessions(store.as_ref()).await, 0);
}

/// A transaction dropped without commit is rolled back, and the store stays usable.
pub async fn dropping_a_transaction_rolls_back(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    {
        let mut tx = ok(store.begin().await, "begin");
        insert_session(tx.as_mut(), "s1").await;
    }
    for _ in 0..3 {
        let mut tx = ok(store.begin().await, "begin after drop");
        insert_session(tx.as_mut(), "s2").await;
        ok(tx.rollback().await, "rollback");
    }
    assert_eq!(sessions(store.as_ref()).await, 0);
}

/// An action's own table and the runtime's rows written through one handle commit or roll back
/// together.
pub async fn action_writes_and_runtime_rows_commit_together(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut setup = ok(store.begin().await, "begin");
    ok(
        setup.batch("CREATE TABLE app_orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)").await,
        "ddl",
    );
    ok(setup.commit().await, "commit");
    for commit in [false, true] {
        let mut tx = ok(store.begin().await, "begin");
        let id = if commit { "o-commit" } else { "o-rollback" };
        ok(
            tx.execute(
                "INSERT INTO app_orders (id, total) VALUES ($1, $2)",
                &[id.into(), 42_i64.into()],
            )
            .await,
            "order",
        );
        insert_session(tx.as_mut(), id).await;
        if commit { ok(tx.commit().await, "commit") } else { ok(tx.rollback().await, "rollback") }
    }
    assert_eq!(count(store.as_ref(), "SELECT count(*) AS n FROM app_orders").await, 1);
    assert_eq!(sessions(store.as_ref()).await, 1);
}

fn values_table(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => {
            "CREATE TABLE app_values (id INTEGER PRIMARY KEY, b INTEGER, i INTEGER, \
            f REAL, t TEXT, y BLOB, j TEXT, ts INTEGER, n TEXT)"
        }
        Dialect::Postgres => {
            "CREATE TABLE app_values (id INTEGER PRIMARY KEY, b BOOLEAN, i BIGINT, \
            f DOUBLE PRECISION, t TEXT, y BYTEA, j JSONB, ts TIMESTAMPTZ, n TEXT)"
        }
    }
}

/// Every kind of value is written and read back, through the portable getters.
pub async fn values_round_trip(fx: &dyn Fixture) {
    let store = fx.open();
    let mut tx = ok(store.begin().await, "begin");
    ok(tx.batch(values_table(fx.dialect())).await, "ddl");
    let doc = json!({"order": "o-1", "lines": [1, 2, 3], "note": "it's"});
    let params = [
        1_i64.into(),
        true.into(),
        i64::MIN.into(),
        1.5_f64.into(),
        "héllo $1 'quoted'".into(),
        SqlValue::Bytes(vec![0, 159, 255]),
        SqlValue::Json(doc.clone()),
        now_value(),
        SqlValue::Null,
    ];
    let insert = "INSERT INTO app_values (id, b, i, f, t, y, j, ts, n) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
    ok(tx.execute(insert, &params).await, "insert");
    let row =
        ok(tx.query_one("SELECT * FROM app_values WHERE id = $1", &[1_i64.into()]).await, "select");
    assert!(ok(row.get_bool("b"), "b"));
    assert_eq!(ok(row.get_i64("i"), "i"), i64::MIN);
    assert_eq!(row.get("f").ok(), Some(&SqlValue::Float(1.5)));
    assert_eq!(ok(row.get_str("t"), "t"), "héllo $1 'quoted'");
    assert_eq!(row.get("y").ok(), Some(&SqlValue::Bytes(vec![0, 159, 255])));
    assert_eq!(ok(row.get_json("j"), "j"), doc);
    assert_eq!(ok(row.get_timestamp("ts"), "ts"), chrono_now());
    assert_eq!(ok(row.get_opt_str("n"), "n"), None);
    let none =
        ok(tx.query_opt("SELECT id FROM app_values WHERE id = $1", &[2_i64.into()]).await, "none");
    assert!(none.is_none());
    let missing = tx.query_one("SELECT id FROM app_values WHERE id = $1", &[2_i64.into()]).await;
    assert_eq!(missing.err().map(|e| e.kind()), Some(StoreErrorKind::NotFound));
}

/// A `File` in the column `docs/files.md` documents (PostgreSQL `JSONB`, SQLite JSON `TEXT` with
/// its check) round-trips whole; `NULL` is no file; SQLite's check refuses text that is not JSON,
/// and a row holding JSON that is not a file reads as an error, never as a file.
pub async fn a_file_round_trips_in_its_documented_column(fx: &dyn Fixture) {
    use jadpo_core::model::file::{File, FileError};
    let store = fx.open();
    let mut tx = ok(store.begin().await, "begin");
    let ddl = match fx.dialect() {
        Dialect::Sqlite => {
            "CREATE TABLE app_docs (id INTEGER PRIMARY KEY,              invoice TEXT CHECK (invoice IS NULL OR json_valid(invoice)))"
        }
        Dialect::Postgres => "CREATE TABLE app_docs (id INTEGER PRIMARY KEY, invoice JSONB)",
    };
    ok(tx.batch(ddl).await, "ddl");
    let digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let file = ok(
        File::new("f_1", "invoice 42.pdf", "application/pdf", 1234, digest)
            .map_err(|e| jadpo_core::StoreError::invalid(e.to_string())),
        "file",
    );
    let insert = "INSERT INTO app_docs (id, invoice) VALUES ($1, $2)";
    ok(tx.execute(insert, &[1_i64.into(), file.to_column()]).await, "insert a file");
    ok(tx.execute(insert, &[2_i64.into(), SqlValue::Null]).await, "insert no file");
    ok(tx.execute(insert, &[3_i64.into(), SqlValue::Json(json!({"id": "f_2"}))]).await, "junk");
    let read = |row: &jadpo_core::sql::Row| match row.get("invoice") {
        Ok(SqlValue::Null) => Ok(None),
        _ => File::from_column(&ok(row.get_json("invoice"), "json")),
    };
    let select = "SELECT invoice FROM app_docs WHERE id = $1";
    let row = ok(tx.query_one(select, &[1_i64.into()]).await, "select");
    assert_eq!(read(&row), Ok(Some(file)));
    let row = ok(tx.query_one(select, &[2_i64.into()]).await, "select");
    assert_eq!(read(&row), Ok(None));
    let row = ok(tx.query_one(select, &[3_i64.into()]).await, "select");
    assert!(matches!(read(&row), Err(FileError::NotAFile(_))), "{:?}", read(&row));
    if fx.dialect() == Dialect::Sqlite {
        let refused = tx.execute(insert, &[4_i64.into(), "not json".into()]).await;
        assert!(refused.is_err(), "the column's check took text that is not JSON");
    }
}

/// A duplicate key is reported as a conflict, which callers treat as "someone else won".
pub async fn unique_violation_is_a_conflict(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    insert_session(tx.as_mut(), "dup").await;
    ok(tx.commit().await, "commit");
    let mut tx = ok(store.begin().await, "begin");
    let err = tx.execute(INSERT_SESSION, &["dup".into(), "u".into(), now_value()]).await.err();
    let err = err.unwrap_or_else(|| panic!("duplicate accepted"));
    assert_eq!(err.kind(), StoreErrorKind::Conflict, "{err}");
    assert!(!err.is_retryable());
}

/// A row pointing at a missing parent is a constraint error (foreign keys are enforced).
pub async fn foreign_key_violation_is_a_constraint_error(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    let sql = "INSERT INTO execution_leases (run_id, worker_id, lease_id, expires_at) VALUES ($1, $2, $3, $4)";
    let err =
        tx.execute(sql, &["no-such-run".into(), "w".into(), "l".into(), 1_i64.into()]).await.err();
    let err = err.unwrap_or_else(|| panic!("orphan lease accepted"));
    assert_eq!(err.kind(), StoreErrorKind::Constraint, "{err}");
}

/// Bad SQL is an invalid-statement error, and the store serves the next transaction.
pub async fn bad_sql_is_invalid_and_the_store_stays_usable(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    let err = tx.execute("INSERT INTO no_such_table (x) VALUES ($1)", &[1_i64.into()]).await.err();
    assert_eq!(err.as_ref().map(|e| e.kind()), Some(StoreErrorKind::Invalid), "{err:?}");
    drop(tx);
    assert_eq!(sessions(store.as_ref()).await, 0);
}

/// An execution `r1` of `checkout` v1, running, as raw SQL of `dialect`.
pub(crate) fn execution_r1(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => {
            "INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, \
            state_json, created_at, updated_at) VALUES ('r1', 'checkout', '1', 'running', '{}', 0, 0)"
        }
        Dialect::Postgres => {
            "INSERT INTO workflow_executions (run_id, workflow_id, workflow_version, status, \
            input, data, created_at, updated_at) VALUES ('r1', 'checkout', '1', 'running', '{}', '{}', now(), now())"
        }
    }
}

/// Deleting an execution deletes its events, commands and lease (ON DELETE CASCADE).
pub async fn deleting_an_execution_cascades(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let mut tx = ok(store.begin().await, "begin");
    ok(tx.batch(execution_r1(fx.dialect())).await, "execution");
    ok(tx.execute("INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) VALUES ('r1:1', 'r1', 1, 'started', $1, 0)", &[SqlValue::Json(json!({}))]).await, "event");
    ok(tx.execute("INSERT INTO outbox_commands (id, run_id, seq, node_id, type, payload, created_at) VALUES ('c1', 'r1', 1, 'n', 'reserve', $1, $2)", &[SqlValue::Json(json!({})), now_value()]).await, "command");
    ok(tx.execute("INSERT INTO execution_leases (run_id, worker_id, lease_id, expires_at) VALUES ('r1', 'w', 'l', $1)", &[1_i64.into()]).await, "lease");
    let status = ok(
        tx.query_one("SELECT status FROM outbox_commands WHERE id = 'c1'", &[]).await,
        "default",
    );
    assert_eq!(ok(status.get_str("status"), "status"), "pending", "command status default");
    ok(
        tx.execute("DELETE FROM workflow_executions WHERE run_id = $1", &["r1".into()]).await,
        "delete",
    );
    for table in ["workflow_events", "outbox_commands", "execution_leases"] {
        let row = ok(tx.query_one(&format!("SELECT count(*) AS n FROM {table}"), &[]).await, table);
        assert_eq!(ok(row.get_i64("n"), "n"), 0, "{table} kept rows of a deleted execution");
    }
}
