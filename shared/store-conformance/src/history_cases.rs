//! History that stays written: the workflow's event log and the audit trail refuse rewrites in
//! the database itself (Jadpo's migration 22), whoever sends the SQL.

use jadpo_core::{Dialect, SqlValue, Store, StoreErrorKind};
use serde_json::json;

use crate::Fixture;
use crate::cases::{chrono_now, count, execution_r1, migrated, now_value, ok};

/// The workflow's event log and the audit trail are append-only in the database itself, for any
/// SQL, not only the runtime's: an event is never rewritten, except by the upgrade that puts an
/// earlier release's inner payload inside its envelope, and leaves only with its run; an audit
/// row is never changed, and (SQLite, which has no roles) leaves only by retention or erasure.
pub async fn history_and_trail_are_append_only(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    let envelope = match fx.dialect() {
        Dialect::Sqlite => {
            "UPDATE workflow_events SET payload = json_object('seq', seq, 'type', type, \
            'payload', json(payload), 'timestamp', timestamp)"
        }
        Dialect::Postgres => {
            "UPDATE workflow_events SET payload = jsonb_build_object('seq', seq, 'type', type, \
            'payload', payload, 'timestamp', timestamp)"
        }
    };
    let mut tx = ok(s.begin().await, "begin");
    ok(tx.batch(execution_r1(fx.dialect())).await, "execution");
    let event = "INSERT INTO workflow_events (id, run_id, seq, type, payload, timestamp) \
                 VALUES ('r1:1', 'r1', 1, 'run.started', $1, $2)";
    ok(tx.execute(event, &[SqlValue::Json(json!({"a": 1})), now_value()]).await, "event");
    let audit = "INSERT INTO jadpo_audit (entity, record_id, seq, changed_at, kind, actor, \
                 changes, encoding) VALUES ('thing', 't1', 1, $1, 'insert', 'web', '{}', 1)";
    ok(tx.execute(audit, &[now_value()]).await, "audit row");
    ok(tx.commit().await, "commit");
    for sql in [
        "UPDATE workflow_events SET type = 'run.completed'",
        "UPDATE workflow_events SET payload = payload",
        "DELETE FROM workflow_events WHERE run_id = 'r1'",
        "UPDATE jadpo_audit SET actor = 'someone else'",
    ] {
        refused_as_append_only(s, sql).await;
    }
    if fx.dialect() == Dialect::Sqlite {
        refused_as_append_only(s, "DELETE FROM jadpo_audit").await;
    }
    assert_eq!(
        count(s, "SELECT count(*) AS n FROM workflow_events WHERE type = 'run.started'").await,
        1
    );
    assert_eq!(count(s, "SELECT count(*) AS n FROM jadpo_audit WHERE actor = 'web'").await, 1);
    // The upgrade's one rewrite passes; the run's deletion takes its events with it.
    ok(s.execute_once(envelope, &[]).await, "the upgrade's rewrite");
    let rows = ok(s.query_once("SELECT payload FROM workflow_events", &[]).await, "payload");
    let payload = ok(rows.first().map(|r| r.get_json("payload")).transpose(), "payload");
    let payload = payload.unwrap_or_default();
    assert_eq!((payload["seq"].clone(), payload["payload"].clone()), (json!(1), json!({"a": 1})));
    ok(s.execute_once("DELETE FROM workflow_executions WHERE run_id = 'r1'", &[]).await, "run");
    assert_eq!(count(s, "SELECT count(*) AS n FROM workflow_events").await, 0);
    // SQLite: retention still deletes the trail's old rows, through the store, past the guard
    // (PostgreSQL's retention runs as the functions' owner: the audit case and the roles tests).
    if fx.dialect() == Dialect::Sqlite {
        let mut tx = ok(s.begin().await, "begin");
        let far = chrono_now() + chrono::Duration::days(1);
        assert_eq!(ok(s.audit_expire(tx.as_mut(), "thing", far, 10).await, "expire"), 1);
        ok(tx.commit().await, "commit");
        assert_eq!(count(s, "SELECT count(*) AS n FROM jadpo_audit_release").await, 0);
    }
}

async fn refused_as_append_only(store: &dyn Store, sql: &str) {
    let mut tx = ok(store.begin().await, "begin");
    let err = tx.execute(sql, &[]).await.err().unwrap_or_else(|| panic!("{sql}: accepted"));
    assert_eq!(err.kind(), StoreErrorKind::Constraint, "{sql}: {err}");
    assert!(err.to_string().contains("append-only"), "{sql}: {err}");
}
