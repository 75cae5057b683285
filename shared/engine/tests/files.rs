//! Stored files' bytes, on both adapters, with the local directory and with S3 (moto's API):
//! deleted by housekeeping only
//! once no field has held the file for the grace period; a re-reference in the grace period
//! keeps them; an upload whose row never came is deleted after the upload grace; a deleted file
//! cannot be referenced again; tombstones go after their retention.

use jadpo_core::model::file_field::FileState;
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_engine::housekeeping::{HousekeepingReport, housekeep_all};
use jadpo_test_env::{Env, Kind};

#[path = "support/files_app.rs"]
mod files_app;
use files_app::{env, env_on_s3, hold, hours, let_go, stands, upload};

async fn pass(env: &Env) -> HousekeepingReport {
    let (mut reports, failures) = housekeep_all(&env.engine, "hk").await;
    assert!(failures.is_empty(), "{failures:?}");
    reports.pop().unwrap_or_else(|| panic!("no report"))
}

fn deleted(report: &HousekeepingReport, class: RecordClass) -> u64 {
    report.deleted.iter().find(|(c, _)| *c == class).map_or(0, |(_, n)| *n)
}

const LIVE: (bool, Option<FileState>) = (true, Some(FileState::Live));
const GONE: (bool, Option<FileState>) = (false, Some(FileState::Deleted));

async fn lifecycle(env: Env, kind: Kind) {
    let held = upload(&env, true).await;
    ok(hold(&env, "r1", &held).await);
    let dropped = upload(&env, true).await;
    ok(hold(&env, "r2", &dropped).await);
    let_go(&env, "r2").await;
    let never = upload(&env, true).await;
    let regrab = upload(&env, true).await;
    ok(hold(&env, "r3", &regrab).await);
    let_go(&env, "r3").await;
    let orphan = upload(&env, false).await;

    let first = pass(&env).await;
    assert_eq!(deleted(&first, RecordClass::FileBytes), 0, "{kind:?}: nothing is past a grace");
    assert_eq!(stands(&env, &orphan).await, (true, None), "{kind:?}: a young orphan stays");

    env.clock.advance(hours(2));
    let second = pass(&env).await;
    assert_eq!(deleted(&second, RecordClass::OrphanUploads), 1, "{kind:?}");
    assert_eq!(stands(&env, &orphan).await, GONE, "{kind:?}: the orphan after the upload grace");
    assert_eq!(stands(&env, &dropped).await, LIVE, "{kind:?}: unheld, but inside its grace");
    ok(hold(&env, "r4", &regrab).await); // a new reference inside the grace

    env.clock.advance(hours(23));
    let third = pass(&env).await;
    assert_eq!(deleted(&third, RecordClass::FileBytes), 2, "{kind:?}");
    for id in [&dropped, &never] {
        assert_eq!(stands(&env, id).await, GONE, "{kind:?}: no field held it for the grace");
    }
    for id in [&held, &regrab] {
        assert_eq!(stands(&env, id).await, LIVE, "{kind:?}: held");
    }
    let refused = hold(&env, "r5", &dropped).await.err().unwrap_or_default();
    assert!(refused.contains("was deleted"), "{kind:?}: {refused}");

    // Let go at +25 h: seen unheld by this pass, deleted only a grace later.
    let_go(&env, "r4").await;
    pass(&env).await;
    env.clock.advance(hours(23));
    pass(&env).await;
    assert_eq!(stands(&env, &regrab).await, LIVE, "{kind:?}: the grace counts from the let-go");
    env.clock.advance(hours(2));
    assert_eq!(deleted(&pass(&env).await, RecordClass::FileBytes), 1, "{kind:?}");
    assert_eq!(stands(&env, &regrab).await, GONE, "{kind:?}");
    assert_eq!(stands(&env, &held).await, LIVE, "{kind:?}");

    env.clock.advance(hours(31 * 24));
    assert_eq!(deleted(&pass(&env).await, RecordClass::FileTombstones), 4, "{kind:?}");
    assert_eq!(stands(&env, &dropped).await, (false, None), "{kind:?}");
    assert_eq!(stands(&env, &held).await, LIVE, "{kind:?}: a held file is never deleted");
}

fn ok(result: Result<(), String>) {
    result.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_go_only_when_no_field_held_them_for_the_grace() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        lifecycle(env(kind).await, kind).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_on_s3_go_only_when_no_field_held_them_for_the_grace() {
    let moto = jadpo_test_harness::MotoServer::start();
    lifecycle(env_on_s3(Kind::Sqlite, &moto, "files-sqlite").await, Kind::Sqlite).await;
    lifecycle(env_on_s3(Kind::Postgres, &moto, "files-postgres").await, Kind::Postgres).await;
}
