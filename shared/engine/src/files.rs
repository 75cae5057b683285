//! Stored files: installing each declared file field's count trigger after migrations (which
//! counts the files the table's rows already hold the first time), and the upload and download
//! use cases behind the `/files` routes: bytes through the server where the storage is a local
//! directory, presigned URLs where clients reach the storage themselves ([`urls`]).
//!
//! Why the count is kept by a trigger: an action writes its rows with its own SQL, so a runtime
//! that counted references itself would only see what it was told; a trigger sees every insert,
//! update and delete of the column in the transaction that makes it, and a rolled-back
//! transaction takes its counting with it.

use jadpo_core::model::file::File;
use jadpo_core::model::file_field::{FieldError, FileField, FileState, Quota, Usage};
use jadpo_core::model::principal::Principal;
use jadpo_core::ports::{BlobError, Blobs, Presigned};
use jadpo_core::{Store, StoreError, commit_or_rollback};

use crate::Engine;

mod urls;

pub use urls::{finish_upload, hands_out_urls, upload_url};

/// Installs (or replaces) the triggers of every field in `fields` (all in `store`), in one
/// transaction; a field whose trigger is new gets the files its existing rows hold counted.
/// Idempotent: run after migrations by `jadpo migrate apply` and the local process. Returns the
/// fields (`table.column`) whose trigger was new.
pub async fn ensure_triggers(
    store: &dyn Store,
    fields: &[&FileField],
) -> Result<Vec<String>, StoreError> {
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let mut tx = store.begin().await?;
    let result = async {
        let mut new = Vec::new();
        for field in fields {
            if store.file_trigger_install(tx.as_mut(), field).await? {
                new.push(field.name());
            }
        }
        Ok::<_, StoreError>(new)
    }
    .await;
    commit_or_rollback(tx, result).await
}

/// Why an upload or a download did nothing.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// No file field `table.column` is declared.
    #[error("no file field {0} is declared")]
    UnknownField(String),
    /// The upload does not fit its field (size, type) or is not a valid file (name).
    #[error(transparent)]
    Refused(#[from] FieldError),
    /// No record the principal may read holds the file (or there is no such file).
    #[error("no file {0} that you may read")]
    NotFound(String),
    /// The application declares no place for files' bytes.
    #[error("this deployment keeps no files: set JADPO_FILES_BUCKET or JADPO_FILES_DIR")]
    NoStorage,
    /// The storage hands out no URLs (a local directory): the server takes the bytes itself.
    #[error("this server takes a file's bytes itself: POST them to /files/{0}?name=FILE_NAME")]
    NoUrls(String),
    /// The storage hands out URLs (S3): bytes do not go through the server.
    #[error("this server takes files through upload URLs: POST /files/{0}/uploads first")]
    UseUrls(String),
    /// No bytes are stored under the upload's id (not written yet, or written elsewhere).
    #[error("no bytes were uploaded for file {0}: PUT them to its upload URL first")]
    NotUploaded(String),
    /// The stored bytes are not the file the upload declared.
    #[error("the bytes stored for file {id} do not match the upload: {what}")]
    Mismatch {
        /// The file id.
        id: String,
        /// What differs.
        what: String,
    },
    /// The uploader keeps as many files, or bytes, as its quota allows.
    #[error(
        "your uploads are at their limit ({} of {} files, {} of {} bytes, this one {size}): \
         uploads no record holds are deleted after the upload grace; attach or wait",
        used.files, quota.files, used.bytes, quota.bytes
    )]
    OverQuota {
        /// What the uploader keeps.
        used: Usage,
        /// Its quota.
        quota: Quota,
        /// The refused upload's size.
        size: u64,
    },
    /// The upload finished too late: housekeeping took its bytes for an abandoned upload.
    #[error("upload {0} finished too late: its bytes were deleted as abandoned; upload it again")]
    TooLate(String),
    /// The blob storage failed.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn blobs(engine: &Engine) -> Result<&dyn Blobs, FilesError> {
    engine.blobs.as_deref().ok_or(FilesError::NoStorage)
}

/// Stores `uploader`'s upload into field `table.column`: its bytes first, then its row (held
/// by no field until a record takes it), recording who uploaded what. Returns the file a record
/// then keeps. Nothing is stored for an unknown field, a file larger than the field takes or of
/// a type it does not take, a bad name, or an uploader at its quota ([`quota`]).
pub async fn upload(
    engine: &Engine,
    (table, column): (&str, &str),
    (name, content_type): (&str, &str),
    bytes: &[u8],
    uploader: &Principal,
) -> Result<File, FilesError> {
    let field = field(engine, (table, column))?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    field.accepts(content_type, size)?;
    let digest = crate::digest::sha256_hex(bytes);
    let id = File::new_id(engine.clock.as_ref());
    let file = File::new(&id, name, content_type, size, &digest).map_err(FieldError::from)?;
    within_quota(engine, field, uploader, size).await?;
    blobs(engine)?.put(&id, bytes).await?;
    crate::fault!("files.after_bytes_stored");
    register(engine, field, &file, uploader).await
}

/// How much `uploader` may keep uploaded: [`crate::EngineSettings::upload_quota`] for a user,
/// no limit for a service (the application itself).
pub fn quota(engine: &Engine, uploader: &Principal) -> Quota {
    match uploader {
        Principal::User(_) => engine.settings.upload_quota,
        Principal::Service(_) => Quota::NONE,
    }
}

/// Refuses an upload of `size` bytes that `uploader`'s quota has no room for, before anything
/// is stored. Registering checks again in its own statement, so uploads racing past this check
/// are refused there (on PostgreSQL, uploads committing at the same instant may each see the
/// others' rows missing and pass together).
async fn within_quota(
    engine: &Engine,
    field: &FileField,
    uploader: &Principal,
    size: u64,
) -> Result<(), FilesError> {
    let quota = quota(engine, uploader);
    let store = engine.store(&field.store)?;
    if quota == Quota::NONE {
        return Ok(());
    }
    let used = store.file_usage(&uploader.owner()).await?;
    if quota.admits(used, size) { Ok(()) } else { Err(FilesError::OverQuota { used, quota, size }) }
}

/// The field `table.column` declares.
fn field<'a>(
    engine: &'a Engine,
    (table, column): (&str, &str),
) -> Result<&'a FileField, FilesError> {
    engine
        .app
        .file_field(table, column)
        .ok_or_else(|| FilesError::UnknownField(format!("{table}.{column}")))
}

/// `file`'s bytes are stored: its row, naming `uploader`, which a record may then hold. A row
/// housekeeping already claimed (an upload that finished after the upload grace) refuses it:
/// [`FilesError::TooLate`]; a row another principal registered is theirs:
/// [`FilesError::NotFound`]; a quota with no room left: [`FilesError::OverQuota`] (the bytes
/// stay until housekeeping deletes them as never registered).
async fn register(
    engine: &Engine,
    field: &FileField,
    file: &File,
    uploader: &Principal,
) -> Result<File, FilesError> {
    let store = engine.store(&field.store)?;
    let (owner, quota) = (uploader.owner(), quota(engine, uploader));
    let Some(stored) = store.file_register(file, &owner, quota, engine.clock.now()).await? else {
        let used = store.file_usage(&owner).await?;
        return Err(FilesError::OverQuota { used, quota, size: file.size() });
    };
    if stored.state != FileState::Live {
        return Err(FilesError::TooLate(file.id().to_owned()));
    }
    if stored.uploader.as_deref() != Some(owner.as_str()) {
        return Err(FilesError::NotFound(file.id().to_owned()));
    }
    tracing::info!(file = %file.id(), field = %field.name(), size = file.size(), "file uploaded");
    Ok(file.clone())
}

/// A file's bytes for a reader: the bytes themselves, or a URL to fetch them from.
#[derive(Debug)]
pub enum Download {
    /// The server serves them (a local directory).
    Bytes(File, Vec<u8>),
    /// The reader fetches them from the storage (S3), before the URL expires.
    Url(File, Presigned),
}

/// How long a download URL works: long enough to start a download, short enough that a URL
/// passed on stops working soon.
pub const DOWNLOAD_URL_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// File `id` for `principal`, its bytes or a URL to them ([`DOWNLOAD_URL_TTL`]): a service
/// reads any file a record holds; a user only one a record of theirs holds (the field's owner
/// column holds their id). Anything else — no such file, a file no record holds yet, another's
/// — is [`FilesError::NotFound`], alike.
pub async fn download(
    engine: &Engine,
    id: &str,
    principal: &Principal,
) -> Result<Download, FilesError> {
    let not_found = || FilesError::NotFound(id.to_owned());
    if !jadpo_core::model::file::id_ok(id) {
        return Err(not_found());
    }
    let file = readable(engine, id, principal).await?.ok_or_else(not_found)?;
    let blobs = blobs(engine)?;
    if let Some(urls) = blobs.urls() {
        let at = engine.clock.now();
        let what = (file.name(), file.content_type());
        let url = urls.download_url(id, what, at, DOWNLOAD_URL_TTL).await?;
        return Ok(Download::Url(file, url));
    }
    let bytes = blobs.get(id).await?.ok_or_else(not_found)?;
    Ok(Download::Bytes(file, bytes))
}

/// The file as the first record `principal` may read holds it.
async fn readable(
    engine: &Engine,
    id: &str,
    principal: &Principal,
) -> Result<Option<File>, FilesError> {
    for field in engine.app.file_fields() {
        let store = engine.store(&field.store)?;
        for (column, owner) in store.file_holders(field, id).await? {
            let may = match principal {
                Principal::Service(_) => true,
                Principal::User(id) => {
                    field.owner_column.is_some() && owner.as_deref() == Some(id.as_str())
                }
            };
            if !may {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&column)
                .map_err(|e| StoreError::internal(format!("{}: not JSON: {e}", field.name())))?;
            let file = File::from_column(&value).map_err(FieldError::from)?;
            return Ok(file);
        }
    }
    Ok(None)
}
