//! An application with one file field (`docs.attachment` in store `main`), and the steps the
//! file tests take: upload (bytes, then the row registering them), hold a file in a row, let go.

use std::sync::Arc;

use chrono::{Duration, Utc};
use jadpo_application::Application;
use jadpo_core::model::file::File;
use jadpo_core::model::file_field::{FileField, FileState};
use jadpo_core::ports::Blobs;
use jadpo_core::{Clock, Dialect, Store};
use jadpo_engine::EngineSettings;
use jadpo_schema::migrate::{Ledger, Migration};
use jadpo_test_env::{Env, Kind};

const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn app() -> Application {
    let pg = "CREATE TABLE docs (id TEXT PRIMARY KEY, attachment JSONB)";
    let sqlite = "CREATE TABLE docs (id TEXT PRIMARY KEY NOT NULL, attachment TEXT \
                  CHECK (attachment IS NULL OR json_valid(attachment)))";
    Application::builder("files")
        .store("main")
        .file_field(FileField::new("main", "docs", "attachment"))
        .migrations(
            "main",
            Dialect::Postgres,
            vec![Migration::new(Ledger::Workflow, 5, "docs", pg)],
        )
        .migrations(
            "main",
            Dialect::Sqlite,
            vec![Migration::new(Ledger::Workflow, 5, "docs", sqlite)],
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The environment with its local directory, its clock set to the wall clock (the directory
/// dates its files by the wall clock, and an orphan must be old by both).
pub(crate) async fn env(kind: Kind) -> Env {
    let env = Env::new(kind, app(), EngineSettings::default()).await;
    env.clock.set(Utc::now());
    env
}

/// The same with the bytes in bucket `bucket` of `moto`'s S3 instead (made here).
#[allow(dead_code)] // the crash loop runs on the directory only
pub(crate) async fn env_on_s3(
    kind: Kind,
    moto: &jadpo_test_harness::MotoServer,
    bucket: &str,
) -> Env {
    use jadpo_blobs_s3::{S3Blobs, client_for_endpoint};
    let mut env = env(kind).await;
    let client = client_for_endpoint(&moto.endpoint(), "us-east-1", "testing", "testing");
    let made = client.create_bucket().bucket(bucket).send().await;
    made.unwrap_or_else(|e| panic!("bucket {bucket}: {e:?}"));
    env.engine.blobs = Some(Arc::new(S3Blobs::new(client, bucket)));
    env
}

pub(crate) fn blobs(env: &Env) -> Arc<dyn Blobs> {
    Arc::clone(env.engine.blobs.as_ref().unwrap_or_else(|| panic!("no blobs")))
}

fn store(env: &Env) -> &dyn Store {
    env.store("main").as_ref()
}

/// Bytes stored under a new id, and (when `register`) the row that says so: an upload.
pub(crate) async fn upload(env: &Env, register: bool) -> String {
    let id = File::new_id(env.clock.as_ref());
    blobs(env).put(&id, id.as_bytes()).await.unwrap_or_else(|e| panic!("{e}"));
    if register {
        let file = File::new(&id, "a.txt", "text/plain", 34, SHA).unwrap_or_else(|e| panic!("{e}"));
        let (by, quota) = ("service:test", jadpo_core::model::file_field::Quota::NONE);
        let row = store(env).file_register(&file, by, quota, env.clock.now()).await;
        assert!(row.unwrap_or_else(|e| panic!("{e}")).is_some(), "no quota refused it");
    }
    id
}

fn column(id: &str) -> jadpo_core::SqlValue {
    File::new(id, "a.txt", "text/plain", 34, SHA).unwrap_or_else(|e| panic!("{e}")).to_column()
}

/// Row `row` holds file `id`; the database's refusal, if any.
pub(crate) async fn hold(env: &Env, row: &str, id: &str) -> Result<(), String> {
    let mut tx = store(env).begin().await.map_err(|e| e.to_string())?;
    let sql = "INSERT INTO docs (id, attachment) VALUES ($1, $2)";
    tx.execute(sql, &[row.into(), column(id)]).await.map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())
}

/// Row `row` is deleted.
pub(crate) async fn let_go(env: &Env, row: &str) {
    let mut tx = store(env).begin().await.unwrap_or_else(|e| panic!("{e}"));
    let sql = "DELETE FROM docs WHERE id = $1";
    tx.execute(sql, &[row.into()]).await.unwrap_or_else(|e| panic!("{e}"));
    tx.commit().await.unwrap_or_else(|e| panic!("{e}"));
}

/// Whether `id`'s bytes are stored, and its row's state.
pub(crate) async fn stands(env: &Env, id: &str) -> (bool, Option<FileState>) {
    let bytes = blobs(env).get(id).await.unwrap_or_else(|e| panic!("{e}")).is_some();
    let row = store(env).file_get(id).await.unwrap_or_else(|e| panic!("{e}"));
    (bytes, row.map(|r| r.state))
}

pub(crate) fn hours(n: i64) -> Duration {
    Duration::hours(n)
}
