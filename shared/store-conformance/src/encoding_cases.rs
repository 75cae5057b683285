//! Encodings: every kept value (an event's payload, a passkey, an audit row's changes, a step's
//! sealed answer) is read back by the form its `encoding` names, `NULL` as the table's legacy
//! form, and a number this build does not read is a clear error for that row only; migration 18
//! renumbers what earlier releases wrote (passkeys 1 → 2; audit rows 1 on PostgreSQL and 2 on
//! SQLite → 3) and lets the audit trail's column take `NULL`.

use chrono::{DateTime, Utc};
use jadpo_core::model::audit::{AuditSpec, replay};
use jadpo_core::model::encoding::{self, Kept};
use jadpo_core::model::step::{RunGrant, RunStart, StepMode};
use jadpo_core::{Dialect, SqlValue, Store};
use jadpo_engine::migrate;
use jadpo_schema::migrate::{Ledger, MigrationCatalog};

use crate::Fixture;
use crate::cases::{migrated, ok};

fn at() -> SqlValue {
    SqlValue::Timestamp(DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap_or_default())
}

fn number(n: Option<i64>) -> SqlValue {
    n.map_or(SqlValue::Null, SqlValue::Int)
}

async fn run(store: &dyn Store, sql: &str, params: Vec<SqlValue>) {
    ok(store.execute_once(sql, &params).await, sql);
}

/// An event whose delivery `d-<tag>` has a payload kept in `encoding`.
async fn event(store: &dyn Store, tag: &str, encoding: Option<i64>) {
    run(
        store,
        "INSERT INTO jadpo_outbox (id, event_type, payload, encoding, chain_depth, source, \
         created_at) VALUES ($1, 'order.placed', '{\"n\": 1}', $2, 0, 'test', $3)",
        vec![format!("e-{tag}").into(), number(encoding), at()],
    )
    .await;
    run(
        store,
        "INSERT INTO jadpo_deliveries (id, outbox_id, subscriber, next_attempt_at, created_at) \
         VALUES ($1, $2, 'reserve', $3, $3)",
        vec![format!("d-{tag}").into(), format!("e-{tag}").into(), at()],
    )
    .await;
}

async fn audit_row(store: &dyn Store, seq: i64, encoding: Option<i64>) {
    let changes = format!("{{\"name\": {{\"before\": null, \"after\": \"v{seq}\"}}}}");
    run(
        store,
        "INSERT INTO jadpo_audit (entity, record_id, seq, changed_at, kind, actor, changes, \
         encoding) VALUES ('thing', 't1', $1, $2, $3, 'test', $4, $5)",
        vec![
            seq.into(),
            at(),
            if seq == 1 { "insert" } else { "update" }.into(),
            changes.into(),
            number(encoding),
        ],
    )
    .await;
}

async fn passkey(store: &dyn Store, id: &str, encoding: Option<i64>) {
    run(
        store,
        "INSERT INTO jadpo_passkeys (credential_id, user_id, user_handle, credential, counters, \
         encoding, registered_at) VALUES ($1, 'u1', 'h1', $2, $2, $3, $4)",
        vec![id.into(), SqlValue::Bytes(vec![1, 2, 3]), number(encoding), at()],
    )
    .await;
}

async fn passkey_encoding(store: &dyn Store, id: &str) -> Option<i16> {
    let mut tx = ok(store.begin().await, "begin");
    let found = ok(store.passkey_find(tx.as_mut(), id, None).await, "find");
    ok(tx.rollback().await, "rollback");
    found.unwrap_or_else(|| panic!("passkey {id} missing")).encoding
}

/// One answered step a run's record holds, its answer kept in `encoding` (`None` omits the column:
/// a table from before migration 18).
async fn step(store: &dyn Store, no: i64, encoding: Option<Option<i64>>) {
    let (columns, values) = match encoding {
        Some(_) => (", encoding", ", $5"),
        None => ("", ""),
    };
    let sql = format!(
        "INSERT INTO jadpo_steps (run_key, step_no, operation, request_fingerprint, \
         idempotency_key, first_sent_at, sent_at, runner_generation, answered_at, sealed_answer, \
         sealing_key_id{columns}) VALUES ('run-1', $1, 'payments /charges', 'f', $2, $3, $3, 1, \
         $3, $4, 'k1'{values})"
    );
    let mut params =
        vec![no.into(), format!("run-1.{no}").into(), at(), SqlValue::Bytes(vec![9; 28])];
    if let Some(e) = encoding {
        params.push(number(e));
    }
    run(store, &sql, params).await;
}

async fn step_record(store: &dyn Store) {
    run(
        store,
        "INSERT INTO jadpo_step_records (run_key, action, build, step_shape, mode, \
         first_started_at, runner_generation, lease_expires_at) VALUES ('run-1', 'pay', 'b1', \
         '', 'recorded', $1, 1, $1)",
        vec![at()],
    )
    .await;
}

/// The steps of `run-1` as a new runner acquires them.
async fn steps(store: &dyn Store) -> Vec<jadpo_core::model::step::StoredStep> {
    let later = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    let start = RunStart {
        run_key: "run-1",
        action: "pay",
        build: "b1",
        mode: StepMode::Recorded,
        now: later,
        lease_until: later + chrono::Duration::seconds(60),
    };
    match ok(store.step_run_acquire(&start).await, "acquire") {
        RunGrant::Acquired { steps, .. } => steps,
        other => panic!("the run was not acquired: {other:?}"),
    }
}

/// Each kept value with `NULL`, its current form and an unknown number: the first two read, the
/// third is refused for its row only.
pub async fn each_kept_value_is_read_by_its_encoding(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    let own = |kept: Kept| Some(i64::from(kept.current().number));

    for (tag, enc) in
        [("legacy", None), ("current", own(Kept::OutboxPayload)), ("unknown", Some(99))]
    {
        event(s, tag, enc).await;
    }
    let ids: Vec<String> = ["d-legacy", "d-current", "d-unknown"].map(str::to_owned).to_vec();
    let loaded = ok(s.deliveries_get(&ids).await, "one read, whatever one row holds");
    let by = |id: &str| loaded.iter().find(|d| d.id == id).unwrap_or_else(|| panic!("{id}"));
    for id in ["d-legacy", "d-current"] {
        assert_eq!(
            (by(id).event.payload["n"].as_i64(), &by(id).unreadable),
            (Some(1), &None),
            "{id}"
        );
    }
    let why = by("d-unknown").unreadable.clone().unwrap_or_default();
    assert!(why.contains("an event's payload is kept in encoding 99"), "{why}");
    assert!(by("d-unknown").event.payload.is_null());

    audit_row(s, 1, None).await;
    audit_row(s, 2, own(Kept::AuditChanges)).await;
    let rows = ok(s.audit_rows("thing", "t1").await, "audit rows");
    assert!(rows.iter().all(|r| r.unreadable.is_none()), "{rows:?}");
    let replayed = replay(&rows).ok().flatten().unwrap_or_default();
    assert_eq!(replayed.get("name"), Some(&Some("v2".to_owned())), "NULL and 3 both read");
    audit_row(s, 3, Some(99)).await;
    let rows = ok(s.audit_rows("thing", "t1").await, "audit rows");
    assert_eq!(rows.iter().filter(|r| r.unreadable.is_some()).count(), 1, "that row only");
    assert!(rows[2].changes.is_null());
    let err = replay(&rows).err().unwrap_or_default();
    assert!(
        err.contains("audit row 3 cannot be read: an audit row's changes is kept in encoding 99"),
        "{err}"
    );

    for (id, enc) in
        [("p-legacy", None), ("p-current", own(Kept::Passkey)), ("p-unknown", Some(99))]
    {
        passkey(s, id, enc).await;
    }
    for (id, readable) in [("p-legacy", true), ("p-current", true), ("p-unknown", false)] {
        let enc = passkey_encoding(s, id).await;
        assert_eq!(Kept::Passkey.read(enc.map(i64::from)).is_ok(), readable, "{id}: {enc:?}");
    }

    step_record(s).await;
    for (no, enc) in [(0, None), (1, own(Kept::StepAnswer)), (2, Some(7))] {
        step(s, no, Some(enc)).await;
    }
    let read: Vec<bool> =
        steps(s).await.iter().map(|st| Kept::StepAnswer.read(st.encoding).is_ok()).collect();
    assert_eq!(read, [true, true, false]);
}

/// A store at migration 17 with rows as earlier releases numbered them: migration 18 renumbers
/// them to the one numbering, and every one reads back.
pub async fn migration_18_renumbers_what_earlier_releases_wrote(fx: &dyn Fixture) {
    let store = fx.open();
    let s = store.as_ref();
    let full = s.migration_catalog();
    let workflow = full.all().filter(|m| m.ledger == Ledger::Workflow).cloned().collect();
    let jadpo =
        full.all().filter(|m| m.ledger == Ledger::Jadpo && m.version <= 17).cloned().collect();
    let before = ok(MigrationCatalog::builtin(fx.dialect(), workflow, jadpo), "catalog to 17");
    ok(migrate::apply(s, &before).await, "migrate to 17");

    event(s, "old", Some(1)).await;
    passkey(s, "p-old", Some(1)).await;
    let old_audit = match fx.dialect() {
        Dialect::Postgres => 1,
        Dialect::Sqlite => 2,
    };
    audit_row(s, 1, Some(old_audit)).await;
    // An audited table whose triggers the previous release made: they name jadpo_audit, which
    // migration 18 makes again on SQLite.
    let spec = AuditSpec::new("gadget", s.name(), "gadgets", &["name"]);
    run(s, "CREATE TABLE gadgets (id TEXT PRIMARY KEY NOT NULL, name TEXT)", vec![]).await;
    ok(jadpo_engine::audit::ensure_triggers(s, &[&spec]).await, "triggers");
    let add = "INSERT INTO gadgets (id, name) VALUES ($1, 'x')";
    run(s, add, vec!["g1".into()]).await;
    step_record(s).await;
    step(s, 0, None).await;
    let old = passkey_encoding(s, "p-old").await.map(i64::from);
    assert!(Kept::Passkey.read(old).is_ok(), "an old number reads as the form it meant there");

    let report = ok(migrate::apply(s, &full).await, "migrate to the latest");
    let applied: Vec<u32> = report.applied.iter().map(|(_, v, _)| *v).collect();
    assert_eq!(applied, [18, 19, 20, 21, 22, 23, 24, 25, 26, 27]);
    assert_eq!(passkey_encoding(s, "p-old").await, Some(encoding::WEBAUTHN_RP_BIN.number));
    let rows = ok(s.audit_rows("thing", "t1").await, "audit rows");
    assert_eq!(rows[0].encoding, Some(i64::from(encoding::AUDIT_TEXT.number)));
    assert!(rows[0].unreadable.is_none());
    audit_row(s, 2, None).await; // the column takes NULL now
    // The old triggers still write (a process of the previous release during a deploy), then
    // the apply makes them again: every row reads, and the record replays.
    run(s, add, vec!["g2".into()]).await;
    ok(jadpo_engine::audit::ensure_triggers(s, &[&spec]).await, "triggers again");
    run(s, add, vec!["g3".into()]).await;
    for id in ["g1", "g2", "g3"] {
        let rows = ok(s.audit_rows("gadget", id).await, "gadget rows");
        assert_eq!(rows.len(), 1, "{id}: the trigger wrote through the rebuild");
        assert!(rows[0].unreadable.is_none(), "{id}: {rows:?}");
        assert!(replay(&rows).is_ok_and(|f| f.is_some()), "{id}");
    }
    let newest = ok(s.audit_rows("gadget", "g3").await, "g3");
    assert_eq!(newest[0].encoding, Some(i64::from(encoding::AUDIT_TEXT.number)));
    let d = ok(s.deliveries_get(&["d-old".to_owned()]).await, "delivery");
    assert_eq!(d.first().map(|d| d.unreadable.is_none()), Some(true));
    let kept = steps(s).await;
    assert_eq!(kept.first().map(|st| st.encoding), Some(None), "answered before 18: legacy");
    assert!(Kept::StepAnswer.read(None).is_ok());
}
