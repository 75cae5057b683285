//! Query plans: a statement that addresses rows by a list of ids (`id IN (SELECT value FROM
//! json_each($1))`) reaches them by primary key, whatever else its `WHERE` says. SQLite's planner
//! otherwise prefers an index on a status column, and walks every row with that status — a cost
//! that grows with the backlog, paid by every commit's relay mark.

use std::sync::Arc;

use jadpo_core::SystemClock;
use jadpo_core::model::audit::AuditSpec;
use jadpo_engine::migrate;
use jadpo_store_sqlite::{DIALECT, Sqlite, SqliteLocation, SqliteOptions};

fn plan(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let sql = format!("EXPLAIN QUERY PLAN {}", sql.replace('$', "?"));
    let mut stmt = conn.prepare(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
    let rows = stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3));
    let rows = rows.unwrap_or_else(|e| panic!("{e}"));
    rows.map(|r| r.unwrap_or_else(|e| panic!("{e}"))).collect()
}

#[tokio::test]
async fn statements_on_a_list_of_ids_reach_their_rows_by_primary_key() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("main.db");
    let location = SqliteLocation::File(path.clone());
    let store = Sqlite::open("main", &location, &SqliteOptions::default(), Arc::new(SystemClock));
    let store = store.unwrap_or_else(|e| panic!("{e}"));
    let catalog = jadpo_store_sqlite::migrate::builtin_catalog();
    migrate::apply(&store, &catalog).await.unwrap_or_else(|e| panic!("{e}"));
    let conn = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let probe = AuditSpec {
        entity: "note".into(),
        store: "main".into(),
        table: "notes".into(),
        columns: vec!["title".into()],
        retention: std::time::Duration::from_secs(60),
    };
    let slots = DIALECT.slots(&probe).unwrap_or_else(|e| panic!("{e}"));
    let by_ids: Vec<_> = slots
        .iter()
        .filter_map(|s| Some((s.name, s.text?)))
        .filter(|(_, text)| text.contains("id IN (SELECT value FROM json_each("))
        .collect();
    assert!(by_ids.len() >= 4, "only {} statements by a list of ids found", by_ids.len());
    let mut wrong = Vec::new();
    for (name, text) in by_ids {
        let steps = plan(&conn, text);
        let by_key = steps.iter().any(|s| s.contains("(id=?)") || s.contains("PRIMARY KEY"));
        let walks = steps.iter().any(|s| s.contains("(status=?)") || s.starts_with("SCAN jadpo_"));
        if !by_key || walks {
            wrong.push(format!("{name}: {steps:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "statements that walk rows instead of their ids:\n{}",
        wrong.join("\n")
    );
}
