//! Separate database roles on PostgreSQL (`jadpo roles grant`): the functions' role writes the
//! application's rows and adds to the audit trail through its trigger, but cannot write, update
//! or delete the trail or the operators' log itself, hide a change in a temporary table of its
//! own, back-date a change, expire rows before their retention, or touch the migration ledgers;
//! the operators' role erases a record with its audit rows but cannot rewrite its own action log. SQLite has no roles and says so.

use crate::common;

use chrono::{Duration, Utc};
use common::{jadpo, text};
use jadpo_core::ports::AuditStore;
use jadpo_core::{Store, TransactionalStore};
use jadpo_store_postgres::{PgOptions, Postgres};
use jadpo_test_harness::{PgTestDb, SqliteTestDb};

/// `url` with its user replaced by `role` (the test clusters trust local connections).
fn as_role(url: &str, role: &str) -> String {
    let mut parsed = url::Url::parse(url).unwrap_or_else(|e| panic!("{e}"));
    parsed.set_username(role).unwrap_or_else(|()| panic!("no user in {url}"));
    let _ = parsed.set_password(None);
    parsed.to_string()
}

fn store(url: &str) -> jadpo_store_postgres::PgStore {
    Postgres::connect("main", url, &PgOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `sql` in its own transaction; the error's text if it failed.
async fn refused(store: &dyn Store, sql: &str) -> String {
    match store.execute_once(sql, &[]).await {
        Ok(n) => panic!("{sql} was allowed ({n} rows)"),
        Err(e) => e.to_string(),
    }
}

async fn count(store: &dyn Store, sql: &str) -> i64 {
    let rows = store.query_once(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows[0].get_i64("n").unwrap_or_else(|e| panic!("{e}"))
}

/// A migrated database with login roles `roles` (made afresh), and a store on it as its owner.
async fn migrated_with_roles(roles: &[&str]) -> (PgTestDb, jadpo_store_postgres::PgStore) {
    let db = PgTestDb::empty().await;
    let owner = store(db.url());
    let out = jadpo(db.url(), &["migrate", "apply"]);
    assert!(out.status.success(), "{}", text(&out));
    for role in roles {
        let create = format!("DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN");
        let mut tx = owner.begin().await.unwrap_or_else(|e| panic!("{e}"));
        tx.batch(&create).await.unwrap_or_else(|e| panic!("{e}"));
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    }
    (db, owner)
}

#[tokio::test]
async fn the_runtime_role_cannot_rewrite_the_trail_and_operators_cannot_rewrite_their_log() {
    let suffix = std::process::id();
    let (runtime, operator) = (format!("jr_{suffix}"), format!("jo_{suffix}"));
    let (db, owner) = migrated_with_roles(&[&runtime, &operator]).await;
    let grant = ["roles", "grant", "--runtime", &runtime, "--operator", &operator];
    let out = jadpo(db.url(), &grant);
    assert!(out.status.success(), "{}", text(&out));
    let out = jadpo(db.url(), &["roles", "grant", "--runtime", "Robert'); --"]);
    assert!(!out.status.success() && text(&out).contains("not a plain lower-case identifier"));

    // The runtime writes an audited row, claiming a time decades ago: the trail says now.
    let functions = store(&as_role(db.url(), &runtime));
    let mut tx = functions.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let context = "SELECT set_config('jadpo.actor', 'service:web', true), \
                   set_config('jadpo.now', '1990-01-01T00:00:00Z', true)";
    tx.query(context, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    let order = "INSERT INTO shop_orders (id, customer, items, created_at) \
                 VALUES ('o-1', 'c1', '[]', now())";
    tx.execute(order, &[]).await.unwrap_or_else(|e| panic!("the runtime's own write: {e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let recent = "SELECT count(*) AS n FROM jadpo_audit WHERE actor = 'service:web' \
                  AND changed_at > now() - interval '1 hour'";
    assert_eq!(
        count(&functions, recent).await,
        1,
        "the change is recorded, at the database's time"
    );
    // Whatever actor the runtime claims, the trail names the role that logged in.
    let rows = functions.audit_rows("order", "o-1").await.unwrap_or_else(|e| panic!("{e}"));
    let roles: Vec<_> = rows.iter().map(|r| (r.actor.as_str(), r.db_role.as_deref())).collect();
    assert_eq!(roles, [("service:web", Some(runtime.as_str()))], "the session's own role");

    for sql in [
        "UPDATE jadpo_audit SET actor = 'someone else'",
        "DELETE FROM jadpo_audit",
        "UPDATE jadpo_operator_actions SET operator = 'someone else'",
        "DELETE FROM jadpo_operator_actions",
        "DELETE FROM jadpo_migrations",
        "UPDATE invariant_schema_migrations SET description = 'x'",
        // Nor forge a row: the trigger writes the trail, `jadpo` the operators' log.
        "INSERT INTO jadpo_audit (entity, record_id, seq) VALUES ('order', 'o-1', 99)",
        "INSERT INTO jadpo_operator_actions (id) VALUES ('forged')",
        // Nor make a temporary table (one named like the trail would shadow it).
        "CREATE TEMP TABLE scratch (x int)",
    ] {
        let err = refused(&functions, sql).await;
        assert!(err.contains("permission denied"), "{sql}: {err}");
    }
    // Retention through the owner's function: only rows past the entity's retention go, whatever
    // cutoff the runtime asks for; an entity with no retention installed keeps everything.
    let far = Utc::now() + Duration::days(365 * 50);
    for entity in ["order", "nothing_here", "x'); DELETE FROM jadpo_audit; --"] {
        let mut tx = functions.begin().await.unwrap_or_else(|e| panic!("{e}"));
        let gone = functions.audit_expire(tx.as_mut(), entity, far, 100).await;
        tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(gone.ok(), Some(0), "{entity}");
    }
    let all = "SELECT count(*) AS n FROM jadpo_audit";
    assert_eq!(count(&owner, all).await, 1, "the runtime expired a fresh row");

    // Operators erase a record with its audit rows, and cannot rewrite their own log.
    let ops_url = as_role(db.url(), &operator);
    let erase = ["audit", "erase", "order", "o-1", "--reason", "asked", "--operator", "ann"];
    let out = jadpo(&ops_url, &erase);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(count(&owner, all).await, 0, "the erasure took the audit rows");
    let ops = store(&ops_url);
    let err = refused(&ops, "UPDATE jadpo_operator_actions SET operator = 'someone else'").await;
    assert!(err.contains("permission denied"), "{err}");

    // The owner's session is trusted with the cutoff it gives (migrations, tests).
    let mut tx = owner.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.execute(order, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let mut tx = owner.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let gone = owner.audit_expire(tx.as_mut(), "order", far, 100).await;
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(gone.ok(), Some(1));

    // Were the runtime given temporary tables back, its own `jadpo_audit` would not catch its
    // changes: the audit functions search their schema first and `pg_temp` last.
    let back = format!(
        "DO $g$ BEGIN EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO %I', \
         current_database(), '{runtime}'); END $g$"
    );
    let mut tx = owner.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(&back).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let mut tx = functions.begin().await.unwrap_or_else(|e| panic!("{e}"));
    let shadow = "CREATE TEMP TABLE jadpo_audit (LIKE jadpo_audit) ON COMMIT DROP";
    tx.batch(shadow).await.unwrap_or_else(|e| panic!("the shadow table: {e}"));
    let hidden = "INSERT INTO shop_orders (id, customer, items, created_at) \
                  VALUES ('o-2', 'c1', '[]', now())";
    tx.execute(hidden, &[]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let trail = "SELECT count(*) AS n FROM jadpo_audit WHERE record_id = 'o-2'";
    assert_eq!(count(&owner, trail).await, 1, "the change went to the session's own table");

    let mut tx = owner.begin().await.unwrap_or_else(|e| panic!("{e}"));
    tx.batch(&format!(
        "DROP OWNED BY {runtime}, {operator}; DROP ROLE {runtime}; DROP ROLE {operator}"
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
}

/// A role that does not exist is named once, with what to do, and nothing is granted (the
/// runtime role that does exist gets no rights from a call naming a missing operator role).
#[tokio::test]
async fn a_missing_role_is_refused_before_anything_is_granted() {
    let runtime = format!("jm_{}", std::process::id());
    let (db, owner) = migrated_with_roles(&[&runtime]).await;
    let missing = "jadpo_no_such_role";
    let out = jadpo(db.url(), &["roles", "grant", "--runtime", &runtime, "--operator", missing]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("does not exist: create it first"), "{said}");
    assert_eq!(said.matches("does not exist").count(), 1, "said once: {said}");
    let sql = format!(
        "SELECT count(*) AS n FROM information_schema.role_table_grants WHERE grantee = '{runtime}'"
    );
    assert_eq!(count(&owner, &sql).await, 0, "granted despite the refusal");
}

#[tokio::test]
async fn sqlite_has_no_roles_and_says_so() {
    let db = SqliteTestDb::empty();
    let out = jadpo(&db.url(), &["migrate", "apply"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = jadpo(&db.url(), &["roles", "grant", "--runtime", "jadpo_runtime"]);
    assert!(
        !out.status.success() && text(&out).contains("SQLite, which has no roles"),
        "{}",
        text(&out)
    );
    let printed = jadpo(&db.url(), &["roles", "grant", "--runtime", "jadpo_runtime", "--sql"]);
    assert!(
        text(&printed).contains("REVOKE INSERT, UPDATE, DELETE ON jadpo_audit"),
        "{}",
        text(&printed)
    );
}
