//! Stored files' reference counts: the triggers on declared file columns keep `jadpo_files` as
//! rows change, in the changing transaction (a rollback takes the counting with it); the first
//! install counts what existing rows hold; housekeeping's steps (unheld, claimed, deleted,
//! tombstone dropped) and a new reference racing a claim.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use jadpo_core::model::file::File;
use jadpo_core::model::file_field::{FileField, FileState, Quota, StoredFile, Usage};
use jadpo_core::{Dialect, SqlValue, Store};
use jadpo_engine::files::ensure_triggers;

use crate::Fixture;
use crate::cases::{migrated, ok};

const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// Registers an upload of `id` (ten bytes) by a service, with no quota; returns its row.
async fn register(s: &dyn Store, id: &str, now: DateTime<Utc>) -> StoredFile {
    let upload = ok(File::new(id, &format!("{id}.pdf"), "application/pdf", 10, SHA), "file");
    let row = ok(s.file_register(&upload, "service:test", Quota::NONE, now).await, "register");
    row.unwrap_or_else(|| panic!("no quota refused {id}"))
}

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + secs, 0).single().unwrap_or_default()
}

fn file(id: &str) -> SqlValue {
    ok(File::new(id, &format!("{id}.pdf"), "application/pdf", 10, SHA), "file").to_column()
}

/// The same file under another name: the same bytes, so the same reference.
fn renamed(id: &str) -> SqlValue {
    ok(File::new(id, "renamed.pdf", "application/pdf", 10, SHA), "file").to_column()
}

async fn docs_table(fx: &dyn Fixture, store: &dyn Store) {
    let ddl = match fx.dialect() {
        Dialect::Postgres => "CREATE TABLE docs (id INTEGER PRIMARY KEY, a JSONB, b JSONB)",
        Dialect::Sqlite => {
            "CREATE TABLE docs (id INTEGER PRIMARY KEY, a TEXT CHECK (a IS NULL OR json_valid(a)), \
             b TEXT CHECK (b IS NULL OR json_valid(b)))"
        }
    };
    let mut tx = ok(store.begin().await, "begin");
    ok(tx.batch(ddl).await, "docs table");
    ok(tx.commit().await, "commit");
}

fn fields(store: &dyn Store) -> [FileField; 2] {
    [FileField::new(store.name(), "docs", "a"), FileField::new(store.name(), "docs", "b")]
}

async fn write(store: &dyn Store, sql: &str, params: Vec<SqlValue>) {
    let mut tx = ok(store.begin().await, "begin");
    ok(tx.execute(sql, &params).await, sql);
    ok(tx.commit().await, "commit");
}

/// `(refs, state)` of `id`, `None` without a row.
async fn count(store: &dyn Store, id: &str) -> Option<(i64, FileState)> {
    ok(store.file_get(id).await, "file_get").map(|f| (f.refs, f.state))
}

async fn counts(store: &dyn Store, ids: &[&str]) -> Vec<i64> {
    let mut out = Vec::new();
    for id in ids {
        out.push(count(store, id).await.map_or(-1, |(n, _)| n));
    }
    out
}

/// Insert, update to the same file, to another, to `NULL`, delete; the same file in two fields;
/// statements touching many rows; a rolled-back transaction; a reference to a deleted file
/// refused with nothing changed.
pub async fn file_counts_follow_every_change(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    docs_table(fx, s).await;
    let [a, b] = fields(s);
    assert_eq!(ok(ensure_triggers(s, &[&a, &b]).await, "install"), ["docs.a", "docs.b"]);
    assert!(ok(ensure_triggers(s, &[&a, &b]).await, "again").is_empty(), "idempotent");

    let insert = "INSERT INTO docs (id, a, b) VALUES ($1, $2, $3)";
    write(s, insert, vec![1_i64.into(), file("f1"), SqlValue::Null]).await;
    assert_eq!(counts(s, &["f1"]).await, [1], "insert");
    write(s, insert, vec![2_i64.into(), file("f1"), file("f1")]).await;
    assert_eq!(counts(s, &["f1"]).await, [3], "the same file in two fields counts twice");
    write(s, "UPDATE docs SET a = $1 WHERE id = 1", vec![renamed("f1")]).await;
    assert_eq!(counts(s, &["f1"]).await, [3], "an update keeping the file");
    write(s, "UPDATE docs SET a = $1 WHERE id = 1", vec![file("f2")]).await;
    assert_eq!(counts(s, &["f1", "f2"]).await, [2, 1], "an update to another file");
    write(s, "UPDATE docs SET a = NULL WHERE id = 1", vec![]).await;
    assert_eq!(counts(s, &["f2"]).await, [0], "an update to no file");
    write(s, "DELETE FROM docs WHERE id = 2", vec![]).await;
    assert_eq!(counts(s, &["f1", "f2"]).await, [0, 0], "a delete");

    let many = "INSERT INTO docs (id, a, b) VALUES (10, $1, NULL), (11, $1, $1), (12, NULL, $1)";
    write(s, many, vec![file("f3")]).await;
    assert_eq!(counts(s, &["f3"]).await, [4], "one statement, many rows");
    write(s, "UPDATE docs SET a = $1, b = $1 WHERE id >= 10", vec![file("f4")]).await;
    assert_eq!(counts(s, &["f3", "f4"]).await, [0, 6], "an update of many rows");
    write(s, "DELETE FROM docs WHERE id >= 11", vec![]).await;
    assert_eq!(counts(s, &["f4"]).await, [2], "a delete of many rows");

    let mut tx = ok(s.begin().await, "begin");
    ok(tx.execute(insert, &[20_i64.into(), file("f4"), file("f5")]).await, "insert");
    ok(tx.execute("DELETE FROM docs WHERE id = 10", &[]).await, "delete");
    ok(tx.rollback().await, "rollback");
    assert_eq!(counts(s, &["f4", "f5"]).await, [2, -1], "a rolled-back transaction counts nothing");

    // A file housekeeping deleted: a row naming it again is refused, whole.
    register(s, "f6", at(0)).await;
    claim_and_delete(s, "f6").await;
    let mut tx = ok(s.begin().await, "begin");
    let refused = tx.execute(insert, &[30_i64.into(), file("f4"), file("f6")]).await;
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("was deleted") && message.contains("upload it again"), "{message}");
    drop(tx);
    assert_eq!(counts(s, &["f4", "f6"]).await, [2, 0], "the refused row changed no count");
    assert_eq!(count(s, "f6").await, Some((0, FileState::Deleted)));
}

/// Marks every unheld file unheld at 0, claims those unheld before 10, deletes `id`'s bytes.
async fn claim_and_delete(s: &dyn Store, id: &str) {
    let mut tx = ok(s.begin().await, "begin");
    ok(s.files_mark_unheld(tx.as_mut(), at(0), 100).await, "mark unheld");
    let claimed = ok(s.files_claim(tx.as_mut(), at(10), at(10), 100).await, "claim");
    ok(tx.commit().await, "commit");
    assert!(claimed.iter().any(|c| c == id), "{id} not claimed: {claimed:?}");
    ok(s.file_mark_deleted(id, at(11)).await, "mark deleted");
}

/// Installing a field's trigger on a table with rows counts the files they hold, once.
pub async fn the_first_install_counts_existing_rows(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    docs_table(fx, s).await;
    let insert = "INSERT INTO docs (id, a, b) VALUES (1, $1, $2), (2, $1, NULL), (3, NULL, NULL)";
    write(s, insert, vec![file("f1"), file("f2")]).await;
    register(s, "f2", at(0)).await;
    let [a, b] = fields(s);
    assert!(!ok(s.file_trigger_exists(&a).await, "exists"), "no trigger yet");
    assert_eq!(ok(ensure_triggers(s, &[&a]).await, "install a"), ["docs.a"]);
    assert!(ok(s.file_trigger_exists(&a).await, "exists"));
    assert!(!ok(s.file_trigger_exists(&b).await, "exists"), "b's is not a's");
    assert_eq!(counts(s, &["f1", "f2"]).await, [2, 0], "a's rows counted, b not yet");
    // A later declaration of b counts b's rows, and reinstalling a counts nothing again.
    assert_eq!(ok(ensure_triggers(s, &[&a, &b]).await, "install b"), ["docs.b"]);
    assert_eq!(counts(s, &["f1", "f2"]).await, [2, 1]);
    ok(ensure_triggers(s, &[&a, &b]).await, "again");
    assert_eq!(counts(s, &["f1", "f2"]).await, [2, 1], "counted once");
    write(s, "DELETE FROM docs", vec![]).await;
    assert_eq!(counts(s, &["f1", "f2"]).await, [0, 0], "and the triggers keep them from there");
}

/// A file held by no field is seen unheld, claimed only after its grace, deleted, kept as a
/// tombstone and then dropped; a new reference in the grace period starts it over; stored bytes
/// no row names are claimed, unless a row names them.
pub async fn unheld_files_are_claimed_only_after_their_grace(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    docs_table(fx, s).await;
    let [a, _] = fields(s);
    ok(ensure_triggers(s, &[&a]).await, "install");
    let upload = register(s, "f1", at(0)).await;
    assert_eq!((upload.refs, upload.state, upload.unheld_since), (0, FileState::Live, None));
    let pass = |now: i64, cutoff: i64| async move {
        let mut tx = ok(s.begin().await, "begin");
        ok(s.files_mark_unheld(tx.as_mut(), at(now), 100).await, "mark");
        let claimed = ok(s.files_claim(tx.as_mut(), at(cutoff), at(now), 100).await, "claim");
        ok(tx.commit().await, "commit");
        claimed
    };
    assert!(pass(0, -100).await.is_empty(), "first seen unheld at 0");
    assert_eq!(ok(s.file_get("f1").await, "get").and_then(|f| f.unheld_since), Some(at(0)));
    // Referenced and let go again inside the grace: seen unheld anew, so not claimed at 0's grace.
    write(s, "INSERT INTO docs (id, a) VALUES (1, $1)", vec![file("f1")]).await;
    assert_eq!(ok(s.file_get("f1").await, "get").and_then(|f| f.unheld_since), None);
    write(s, "DELETE FROM docs", vec![]).await;
    assert!(pass(50, 1).await.is_empty(), "unheld since 50 now, not 0");
    assert!(pass(60, 50).await.is_empty(), "the cutoff is exclusive");
    assert_eq!(pass(70, 51).await, ["f1"], "claimed once its grace is over");
    assert!(pass(80, 79).await.is_empty(), "claimed once");
    let mut tx = ok(s.begin().await, "begin");
    assert_eq!(ok(s.files_deleting(tx.as_mut(), 10).await, "deleting"), ["f1"]);
    ok(tx.commit().await, "commit");
    ok(s.file_mark_deleted("f1", at(90)).await, "deleted");
    assert_eq!(count(s, "f1").await, Some((0, FileState::Deleted)));
    let mut tx = ok(s.begin().await, "begin");
    assert!(ok(s.files_deleting(tx.as_mut(), 10).await, "deleting").is_empty());
    assert_eq!(ok(s.files_drop_tombstones(tx.as_mut(), at(90), 10).await, "drop"), 0);
    assert_eq!(ok(s.files_drop_tombstones(tx.as_mut(), at(91), 10).await, "drop"), 1);
    ok(tx.commit().await, "commit");
    assert_eq!(count(s, "f1").await, None);

    register(s, "f8", at(100)).await;
    let mut tx = ok(s.begin().await, "begin");
    assert!(ok(s.file_claim_orphan(tx.as_mut(), "f9", at(100)).await, "orphan"), "no row");
    assert!(!ok(s.file_claim_orphan(tx.as_mut(), "f8", at(100)).await, "orphan"), "registered");
    ok(tx.commit().await, "commit");
    assert_eq!(count(s, "f9").await, Some((0, FileState::Deleting)));
    assert_eq!(count(s, "f8").await, Some((0, FileState::Live)));
}

/// A writer referencing a file while housekeeping claims it: whichever comes first, the file is
/// either held and live, or the writer's row is refused; never held and deleted.
pub async fn a_reference_racing_a_claim_keeps_the_bytes(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    docs_table(fx, s).await;
    let [a, _] = fields(s);
    ok(ensure_triggers(s, &[&a]).await, "install");
    register(s, "f1", at(0)).await;
    let mut tx = ok(s.begin().await, "begin");
    ok(s.files_mark_unheld(tx.as_mut(), at(0), 10).await, "mark");
    ok(tx.commit().await, "commit");
    // The writer's transaction holds its reference, uncommitted, while a housekeeper claims.
    let mut writer = ok(s.begin().await, "begin");
    let insert = "INSERT INTO docs (id, a) VALUES (1, $1)";
    ok(writer.execute(insert, &[file("f1")]).await, "reference");
    let housekeeper: Arc<dyn Store> = fx.open();
    let claim = tokio::spawn(async move {
        let s = housekeeper.as_ref();
        let mut tx = ok(s.begin().await, "begin");
        let claimed = ok(s.files_claim(tx.as_mut(), at(100), at(100), 10).await, "claim");
        ok(tx.commit().await, "commit");
        claimed
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    ok(writer.commit().await, "the writer commits");
    let claimed = ok(claim.await, "claim task");
    assert!(claimed.is_empty(), "a held file was claimed: {claimed:?}");
    assert_eq!(count(s, "f1").await, Some((1, FileState::Live)));
}

/// An upload's row records who uploaded it and what it registered; a second registration of the
/// id (another principal finishing the same upload) leaves it as it is; an uploader's files and
/// bytes are counted while live, and a registration past either quota writes nothing.
pub async fn uploads_record_their_uploader_within_a_quota(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let s = store.as_ref();
    let pdf = |id: &str, size: u64| ok(File::new(id, "a.pdf", "application/pdf", size, SHA), "f");
    let quota = Quota { files: 2, bytes: 100 };
    let alice = "user:alice";
    let first = ok(s.file_register(&pdf("f1", 60), alice, quota, at(0)).await, "register");
    let first = first.unwrap_or_else(|| panic!("the first upload fits"));
    assert_eq!(first.uploader.as_deref(), Some(alice));
    assert_eq!(first.registered, Some(pdf("f1", 60)), "what was uploaded");
    let again = ok(s.file_register(&pdf("f1", 60), "user:bob", quota, at(1)).await, "again");
    assert_eq!(again.and_then(|r| r.uploader).as_deref(), Some(alice), "left as it was");
    let usage = |who: &'static str| async move { ok(s.file_usage(who).await, "usage") };
    assert_eq!(usage(alice).await, Usage { files: 1, bytes: 60 });
    assert_eq!(usage("user:bob").await, Usage::default(), "bob registered nothing");
    let too_big = ok(s.file_register(&pdf("f2", 41), alice, quota, at(2)).await, "too big");
    assert_eq!(too_big, None, "60 + 41 bytes is over 100");
    assert_eq!(count(s, "f2").await, None, "and nothing was written");
    assert!(ok(s.file_register(&pdf("f2", 40), alice, quota, at(2)).await, "fits").is_some());
    let third = ok(s.file_register(&pdf("f3", 0), alice, quota, at(3)).await, "third");
    assert_eq!(third, None, "two files is the most");
    assert!(ok(s.file_register(&pdf("f3", 0), "user:bob", quota, at(3)).await, "bob").is_some());
    // A file whose bytes are gone stops counting.
    let mut tx = ok(s.begin().await, "begin");
    ok(s.files_mark_unheld(tx.as_mut(), at(4), 10).await, "mark");
    let claimed = ok(s.files_claim(tx.as_mut(), at(5), at(5), 10).await, "claim");
    ok(tx.commit().await, "commit");
    assert_eq!(claimed.len(), 3, "every upload was unheld");
    assert_eq!(usage(alice).await, Usage::default(), "claimed files no longer count");
    let mut tx = ok(s.begin().await, "begin");
    let read = ok(s.file_get_in(tx.as_mut(), "f2").await, "read in a transaction");
    ok(tx.commit().await, "commit");
    assert_eq!(read.map(|r| r.state), Some(FileState::Deleting));
}
