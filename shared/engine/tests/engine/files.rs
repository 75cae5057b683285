//! Stored files' bytes, on both adapters, with the local directory and with S3 (moto's API):
//! deleted by housekeeping only
//! once no field has held the file for the grace period; a re-reference in the grace period
//! keeps them; an upload whose row never came is deleted after the upload grace; a deleted file
//! cannot be referenced again; tombstones go after their retention.

use jadpo_core::model::file_field::FileState;
use jadpo_core::model::housekeeping::RecordClass;
use jadpo_engine::housekeeping::{HousekeepingReport, housekeep_all};
use jadpo_test_env::{Env, Kind};

use crate::files_app;
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

/// The presigned way on S3: what the client declared is signed, the bytes go to the bucket
/// through the URL, and only bytes that match are registered; a reader gets a URL.
async fn presigned(env: Env, kind: Kind) {
    use jadpo_core::model::file_field::FieldError;
    use jadpo_engine::files::{Download, FilesError, download, finish_upload, upload_url};
    let engine = &env.engine;
    let field = ("docs", "attachment");
    let bytes = b"%PDF-1.7 presigned".to_vec();
    let sha = sha256_hex(&bytes);
    let web = jadpo_core::model::principal::Principal::Service("web".into());
    let declare =
        |size| upload_url(engine, field, ("a.pdf", "application/pdf"), (size, &sha), &web);

    let (file, put) = declare(18).await.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    assert_eq!(stands(&env, file.id()).await, (false, None), "{kind:?}: signing stores nothing");
    let early = finish_upload(engine, field, &file, &web).await;
    assert!(matches!(early, Err(FilesError::NotUploaded(_))), "{kind:?}: {early:?}");
    assert_eq!(follow(&put, &bytes).await, 200, "{kind:?}");
    let done = finish_upload(engine, field, &file, &web).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done, file, "{kind:?}");
    assert_eq!(stands(&env, file.id()).await, LIVE, "{kind:?}: registered");
    let twice = finish_upload(engine, field, &file, &web).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(twice, file, "{kind:?}: finishing twice answers the same file");
    let someone = jadpo_core::model::principal::Principal::User("mallory".into());
    let theirs = finish_upload(engine, field, &file, &someone).await;
    assert!(
        matches!(theirs, Err(FilesError::NotFound(_))),
        "{kind:?}: another's finish {theirs:?}"
    );
    let kept = env.store("main").file_get(file.id()).await.unwrap_or_else(|e| panic!("{e}"));
    let uploader = kept.and_then(|row| row.uploader);
    assert_eq!(uploader.as_deref(), Some("service:web"), "{kind:?}: still the uploader's");

    let (other, put) = declare(18).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(follow(&put, b"not the declared bytes").await, 200, "{kind:?}: moto takes any");
    let wrong = finish_upload(engine, field, &other, &web).await;
    assert!(matches!(wrong, Err(FilesError::Mismatch { .. })), "{kind:?}: {wrong:?}");
    let listed = files_app::blobs(&env).list("", 100).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(listed.iter().any(|b| b.id == other.id()), "{kind:?}: the bytes left for the sweep");
    let row = env.store("main").file_get(other.id()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(row, None, "{kind:?}: never registered");

    let big = declare(11 * 1024 * 1024).await;
    assert!(matches!(big, Err(FilesError::Refused(FieldError::TooLarge { .. }))), "{big:?}");
    let unknown =
        upload_url(engine, ("docs", "nope"), ("a.pdf", "application/pdf"), (1, &sha), &web).await;
    assert!(matches!(unknown, Err(FilesError::UnknownField(_))), "{kind:?}: {unknown:?}");
    let bad = upload_url(engine, field, ("a/b.pdf", "application/pdf"), (18, &sha), &web).await;
    assert!(matches!(bad, Err(FilesError::Refused(FieldError::File(_)))), "{kind:?}: {bad:?}");

    // A housekeeper took the bytes for an abandoned upload before the finish came.
    let (claimed, put) = declare(18).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(follow(&put, &bytes).await, 200);
    let mut tx = env.store("main").begin().await.unwrap_or_else(|e| panic!("{e}"));
    let store = env.store("main");
    assert!(
        store
            .file_claim_orphan(
                tx.as_mut(),
                claimed.id(),
                jadpo_core::Clock::now(env.clock.as_ref())
            )
            .await
            .is_ok()
    );
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
    let late = finish_upload(engine, field, &claimed, &web).await;
    assert!(matches!(late, Err(FilesError::TooLate(_))), "{kind:?}: {late:?}");
    let (stale, put) = declare(18).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(follow(&put, &bytes).await, 200);
    env.clock.advance(hours(2));
    let stale = finish_upload(engine, field, &stale, &web).await;
    assert!(matches!(stale, Err(FilesError::TooLate(_))), "{kind:?}: past the upload grace");

    ok(hold(&env, "p1", file.id()).await);
    let service = jadpo_core::model::principal::Principal::Service("ops".into());
    let Ok(Download::Url(held, get)) = download(engine, file.id(), &service).await else {
        panic!("{kind:?}: a held file on S3 is read through a URL");
    };
    assert_eq!(held.id(), file.id());
    let link = (get.url.clone(), get.headers.clone());
    let read = tokio::task::spawn_blocking(move || {
        jadpo_test_harness::http_request("GET", &link.0, &link.1, b"")
    });
    assert_eq!(read.await.unwrap_or_else(|e| panic!("{e}")).body, bytes, "{kind:?}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Follows presigned `url` with `body`; the status.
async fn follow(url: &jadpo_core::ports::Presigned, body: &[u8]) -> u16 {
    let (method, link, headers, body) =
        (url.method.clone(), url.url.clone(), url.headers.clone(), body.to_vec());
    let answer = tokio::task::spawn_blocking(move || {
        jadpo_test_harness::http_request(&method, &link, &headers, &body)
    });
    answer.await.unwrap_or_else(|e| panic!("{e}")).status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presigned_uploads_register_only_the_bytes_declared() {
    let moto = jadpo_test_harness::MotoServer::start();
    presigned(env_on_s3(Kind::Sqlite, &moto, "urls-sqlite").await, Kind::Sqlite).await;
    presigned(env_on_s3(Kind::Postgres, &moto, "urls-postgres").await, Kind::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_directory_hands_out_no_urls_and_serves_bytes_itself() {
    use jadpo_engine::files::{Download, FilesError, download, upload, upload_url};
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let env = env(kind).await;
        let engine = &env.engine;
        let field = ("docs", "attachment");
        let sha = sha256_hex(b"x");
        let service = jadpo_core::model::principal::Principal::Service("ops".into());
        let refused = upload_url(engine, field, ("a.txt", "text/plain"), (1, &sha), &service).await;
        assert!(matches!(refused, Err(FilesError::NoUrls(_))), "{kind:?}: {refused:?}");
        let file = upload(engine, field, ("a.txt", "text/plain"), b"x", &service).await;
        let file = file.unwrap_or_else(|e| panic!("{e}"));
        ok(hold(&env, "d1", file.id()).await);
        let got = download(engine, file.id(), &service).await;
        assert!(matches!(got, Ok(Download::Bytes(_, ref b)) if b == b"x"), "{kind:?}: {got:?}");
    }
}

/// A user keeps at most the quota's files and bytes uploaded; an upload past it stores nothing
/// (no bytes, no row) and says how much is kept; another user, and a service, still upload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_past_the_upload_quota_stores_nothing_on_both() {
    use jadpo_core::model::file_field::{Quota, Usage};
    use jadpo_core::model::principal::Principal;
    use jadpo_engine::files::{FilesError, upload};
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let env = env(kind).await;
        let mut engine = env.engine.clone();
        engine.settings.upload_quota = Quota { files: 2, bytes: 3 };
        let field = ("docs", "attachment");
        let (alice, bob) = (Principal::User("alice".into()), Principal::User("bob".into()));
        let put = |bytes: &'static [u8], who: Principal| {
            let engine = engine.clone();
            async move { upload(&engine, field, ("a.txt", "text/plain"), bytes, &who).await }
        };
        assert!(put(b"x", alice.clone()).await.is_ok(), "{kind:?}");
        let listed = || async { files_app::blobs(&env).list("", 100).await.map(|l| l.len()) };
        let before = listed().await.unwrap_or_else(|e| panic!("{e}"));
        let big = put(b"yyy", alice.clone()).await;
        let used = Usage { files: 1, bytes: 1 };
        assert!(
            matches!(big, Err(FilesError::OverQuota { used: u, size: 3, .. }) if u == used),
            "{kind:?}: 1 + 3 bytes is past 3: {big:?}"
        );
        assert!(put(b"yy", alice.clone()).await.is_ok(), "{kind:?}: 1 + 2 bytes fits");
        let third = put(b"", alice.clone()).await;
        assert!(matches!(third, Err(FilesError::OverQuota { .. })), "{kind:?}: {third:?}");
        let said = third.map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(said.contains("2 of 2 files, 3 of 3 bytes"), "{kind:?}: {said}");
        assert_eq!(listed().await.ok(), Some(before + 1), "{kind:?}: refused bytes not stored");
        assert!(put(b"zzz", bob).await.is_ok(), "{kind:?}: bob's quota is his own");
        let service = Principal::Service("ops".into());
        assert!(put(b"many bytes", service).await.is_ok(), "{kind:?}: services have no quota");
    }
}
