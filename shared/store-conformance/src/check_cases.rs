//! `jadpo check`'s findings on a real database of each dialect: the fixture migrated as the
//! `warehouse` store of the placement cases' application is its own snapshot (no finding), then
//! drifted by hand — a column added, an index dropped, a column retyped, renamed or dropped — and
//! each drift is found as what it is; a ledger behind the migrations is `migration.out_of_date`,
//! naming the migration; a table the store does not place is a notice; a snapshot older than
//! the migrations, or different from what they make, fails.

use std::collections::BTreeMap;

use jadpo_core::{Dialect, Store};
use jadpo_engine::check::{self, Expected, Finding, Severity};
use jadpo_engine::migrate;
use jadpo_schema::snapshot::{Snapshot, provenance};

use crate::Fixture;
use crate::cases::ok;
use crate::placement_cases::app;

/// The fixture migrated as `warehouse`, with the snapshot that makes and what made each part.
struct Checked {
    store: std::sync::Arc<dyn Store>,
    built: Snapshot,
    provenance: jadpo_schema::snapshot::Provenance,
    placed: Vec<&'static str>,
    dialect: Dialect,
}

impl Checked {
    async fn new(fx: &dyn Fixture) -> Self {
        let store = fx.open();
        let app = app(Some("main"));
        let catalog = ok(store.migration_catalog().with_app_migrations(vec![]), "catalog");
        let catalog = ok(catalog.with_placement(app.store_features("warehouse")), "placement");
        let built = ok(check::build_snapshot(store.as_ref(), &catalog, "warehouse").await, "built");
        let placed = app.placed_tables("warehouse", fx.dialect());
        Self { store, built, provenance: provenance(&catalog), placed, dialect: fx.dialect() }
    }

    fn expected(&self) -> Expected<'_> {
        Expected {
            store: "warehouse",
            dialect: self.dialect.name(),
            built: &self.built,
            provenance: &self.provenance,
            placed: &self.placed,
        }
    }

    /// The live database against the snapshot it was built as.
    async fn live(&self) -> Vec<Finding> {
        let tables = ok(check::describe(self.store.as_ref()).await, "describe");
        let applied = ok(self.store.migrations_applied().await, "ledger");
        check::check_live(&self.expected(), &self.built, &tables, &applied)
    }

    async fn run(&self, sql: &str) {
        for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
            ok(self.store.execute_once(statement, &[]).await, statement);
        }
    }
}

fn codes(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.code.as_str()).collect()
}

/// Each kind of drift by hand is found as what it is, and undoing it passes again.
pub async fn drift_by_hand_is_found_by_kind(fx: &dyn Fixture) {
    let c = Checked::new(fx).await;
    assert!(c.live().await.is_empty(), "{}: its own snapshot: {:?}", c.dialect, c.live().await);

    c.run("ALTER TABLE jadpo_outbox ADD COLUMN note TEXT").await;
    let found = c.live().await;
    assert_eq!(codes(&found), ["database.column_added"], "{}", c.dialect);
    assert!(found[0].message.contains("jadpo_outbox.note"), "{}", found[0].message);
    c.run("ALTER TABLE jadpo_outbox DROP COLUMN note").await;

    c.run("DROP INDEX jadpo_deliveries_due_idx").await;
    assert_eq!(codes(&c.live().await), ["database.index_missing"], "{}", c.dialect);
    c.run("CREATE INDEX jadpo_deliveries_due_idx ON jadpo_deliveries (status, next_attempt_at)")
        .await;

    c.run("ALTER TABLE jadpo_outbox RENAME COLUMN tracestate TO trace_state").await;
    let found = c.live().await;
    assert_eq!(codes(&found), ["database.column_renamed"], "{}", c.dialect);
    assert!(found[0].fix.contains("rename it back to tracestate"), "{}", found[0].fix);
    c.run("ALTER TABLE jadpo_outbox RENAME COLUMN trace_state TO tracestate").await;

    c.run("ALTER TABLE jadpo_outbox DROP COLUMN tracestate").await;
    assert_eq!(codes(&c.live().await), ["database.column_dropped"], "{}", c.dialect);
    c.run("ALTER TABLE jadpo_outbox ADD COLUMN tracestate TEXT").await;
    assert!(c.live().await.is_empty(), "{}: undone: {:?}", c.dialect, c.live().await);

    c.run(match c.dialect {
        Dialect::Postgres => {
            "ALTER TABLE jadpo_housekeeping ALTER COLUMN lease_owner TYPE varchar(40)"
        }
        // SQLite changes a type only by making the table again.
        Dialect::Sqlite => {
            "ALTER TABLE jadpo_housekeeping RENAME TO jadpo_housekeeping_old;
             CREATE TABLE jadpo_housekeeping (name TEXT PRIMARY KEY NOT NULL, lease_owner BLOB,
                 lease_expires_at INTEGER, lease_generation INTEGER NOT NULL DEFAULT 0,
                 last_completed_at INTEGER);
             DROP TABLE jadpo_housekeeping_old"
        }
    })
    .await;
    let found = c.live().await;
    assert_eq!(codes(&found), ["database.column_retyped"], "{}: {found:?}", c.dialect);
    assert!(found[0].message.contains("jadpo_housekeeping.lease_owner"), "{}", found[0].message);
    assert!(found.iter().all(|f| f.severity == Severity::Error));
}

/// A database whose ledger stops before a migration, and lacks what it makes, is out of date
/// with that migration named; an unplaced system table there is a notice only.
pub async fn a_database_behind_its_migrations_is_out_of_date(fx: &dyn Fixture) {
    let c = Checked::new(fx).await;
    c.run(
        "DELETE FROM jadpo_migrations WHERE ledger = 'jadpo' AND version = 18;
         ALTER TABLE jadpo_steps DROP COLUMN encoding",
    )
    .await;
    let found = c.live().await;
    assert_eq!(codes(&found), ["migration.out_of_date"], "{}", c.dialect);
    let message = &found[0].message;
    assert!(
        message.contains(
            "has not applied jadpo migration 18 (encodings), which adds jadpo_steps.encoding"
        ),
        "{message}"
    );
    assert!(found[0].fix.contains("jadpo migrate apply"));

    c.run("CREATE TABLE jadpo_flags (name TEXT PRIMARY KEY)").await;
    let found = c.live().await;
    let notice = found.iter().find(|f| f.code == "placement.unplaced");
    assert!(notice.is_some_and(|n| n.severity == Severity::Notice), "{found:?}");
}

/// The snapshot against what the migrations make: equal passes; one taken before a migration is
/// out of date with it; one that differs otherwise fails; none at all fails.
pub async fn a_snapshot_is_checked_against_the_migrations(fx: &dyn Fixture) {
    let c = Checked::new(fx).await;
    let e = c.expected();
    assert!(check::check_snapshot(&e, Some(&c.built), "warehouse.json").is_empty());
    assert!(check::check_placement(&e).is_empty(), "{:?}", check::check_placement(&e));

    let mut older = c.built.clone();
    older.migrations = BTreeMap::from([("jadpo".to_owned(), 17), ("workflow".to_owned(), 9)]);
    for t in older.tables.iter_mut().filter(|t| t.name == "jadpo_steps") {
        t.columns.retain(|col| col.name != "encoding");
    }
    let found = check::check_snapshot(&e, Some(&older), "warehouse.json");
    assert_eq!(codes(&found), ["migration.out_of_date"], "{}", c.dialect);
    let message = &found[0].message;
    assert!(
        message
            .contains("predates jadpo migration 18 (encodings), which adds jadpo_steps.encoding"),
        "{message}"
    );

    let mut edited = c.built.clone();
    for t in edited.tables.iter_mut().filter(|t| t.name == "jadpo_outbox") {
        for col in t.columns.iter_mut().filter(|col| col.name == "source") {
            col.data_type = "bytea".to_owned();
        }
    }
    assert_eq!(
        codes(&check::check_snapshot(&e, Some(&edited), "w.json")),
        ["snapshot.column_retyped"]
    );
    assert_eq!(codes(&check::check_snapshot(&e, None, "w.json")), ["snapshot.missing"]);

    let mut more = c.placed.clone();
    more.push("jadpo_flags");
    let wanting = Expected { placed: &more, ..c.expected() };
    assert_eq!(codes(&check::check_placement(&wanting)), ["placement.not_created"]);
    ok(migrate::status(c.store.as_ref(), &c.store.migration_catalog()).await, "status");
}

/// A snapshot built on this adapter, written as its file and read back, is the same snapshot,
/// and the database it was built on matches the file read back.
pub async fn a_snapshot_round_trips_through_its_file(fx: &dyn Fixture) {
    let c = Checked::new(fx).await;
    let text = c.built.to_text();
    let read = ok(Snapshot::parse(&text, "warehouse.json"), "read back");
    assert_eq!(read, c.built, "{}", c.dialect);
    assert_eq!(read.to_text(), text, "the same bytes again");
    assert!(read.tables.iter().any(|t| t.name == "jadpo_outbox"), "{}", c.dialect);
    assert!(!read.tables.iter().any(|t| t.name == "jadpo_migrations"), "the ledger is in none");
    let tables = ok(check::describe(c.store.as_ref()).await, "describe");
    let applied = ok(c.store.migrations_applied().await, "ledger");
    assert!(check::check_live(&c.expected(), &read, &tables, &applied).is_empty());
}

/// A declared file field whose count trigger is not installed is an error naming the field, and
/// installing it (as `jadpo migrate apply` does) clears it.
pub async fn a_file_field_without_its_trigger_is_a_finding(fx: &dyn Fixture) {
    use jadpo_core::model::file_field::FileField;
    let c = Checked::new(fx).await;
    let all = c.store.migration_catalog();
    ok(migrate::apply(c.store.as_ref(), &all).await, "every feature's tables");
    c.run(match fx.dialect() {
        Dialect::Postgres => "CREATE TABLE docs (id TEXT PRIMARY KEY, a JSONB)",
        Dialect::Sqlite => "CREATE TABLE docs (id TEXT PRIMARY KEY NOT NULL, a TEXT)",
    })
    .await;
    let field = FileField::new("warehouse", "docs", "a");
    let s = c.store.as_ref();
    let found = ok(check::check_file_triggers(&c.expected(), s, &[&field]).await, "check");
    assert_eq!(codes(&found), ["files.no_trigger"], "{}", c.dialect);
    assert!(found[0].message.contains("file field docs.a has no count trigger"), "{found:?}");
    assert!(found[0].fix.contains("jadpo migrate apply"));
    ok(jadpo_engine::files::ensure_triggers(s, &[&field]).await, "install");
    let found = ok(check::check_file_triggers(&c.expected(), s, &[&field]).await, "check");
    assert!(found.is_empty(), "{found:?}");
}
