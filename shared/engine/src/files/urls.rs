//! Uploads through presigned URLs, for storage clients reach themselves (S3): the server signs a
//! `PUT` for a new file id with the size, type and SHA-256 the client declared and its field
//! takes; the client writes the bytes; then it asks the server to finish the upload, which reads
//! what the storage recorded and registers the file only if it matches.
//!
//! Why two calls and no row at the first: bytes are stored before any row names them, as a
//! direct upload does, so an upload the client never finishes is an orphan that housekeeping
//! deletes after the upload grace. A URL lasts a quarter of that grace (at most 15 minutes), so
//! bytes written through it land long before housekeeping may take them; a finish that comes
//! later still is refused ([`FilesError::TooLate`]) rather than answered with a file no record
//! can hold.

use std::time::Duration;

use jadpo_core::model::file::File;
use jadpo_core::model::file_field::FieldError;
use jadpo_core::ports::{BlobHead, Presigned, UploadTerms, Urls};

use jadpo_core::model::principal::Principal;

use super::{FilesError, blobs, field, register, within_quota};
use crate::Engine;

/// The longest an upload URL lasts.
const UPLOAD_URL_MAX: Duration = Duration::from_secs(900);

/// How long an upload URL lasts: a quarter of the upload grace, at most [`UPLOAD_URL_MAX`].
fn upload_ttl(engine: &Engine) -> Duration {
    (engine.settings.housekeeping.upload_grace / 4).clamp(Duration::from_secs(1), UPLOAD_URL_MAX)
}

/// Whether the storage hands out URLs (S3), so that files' bytes never pass through the server.
pub fn hands_out_urls(engine: &Engine) -> bool {
    engine.blobs.as_ref().is_some_and(|b| b.urls().is_some())
}

fn urls<'a>(engine: &'a Engine, field: &str) -> Result<&'a dyn Urls, FilesError> {
    blobs(engine)?.urls().ok_or_else(|| FilesError::NoUrls(field.to_owned()))
}

/// A new file for field `table.column`, declared by its `uploader` (`name`, `content_type`,
/// `size`, `sha256` in hex), and the URL to `PUT` its bytes to. Refused, with nothing signed,
/// when the field does not take it, the value is not a file, or the uploader's quota has no
/// room for it.
pub async fn upload_url(
    engine: &Engine,
    (table, column): (&str, &str),
    (name, content_type): (&str, &str),
    (size, sha256): (u64, &str),
    uploader: &Principal,
) -> Result<(File, Presigned), FilesError> {
    let field = field(engine, (table, column))?;
    let id = File::new_id(engine.clock.as_ref());
    let file = File::new(&id, name, content_type, size, sha256).map_err(FieldError::from)?;
    field.accepts(file.content_type(), size)?;
    let urls = urls(engine, &format!("{table}/{column}"))?;
    within_quota(engine, field, uploader, size).await?;
    let terms = UploadTerms {
        size,
        content_type: file.content_type().to_owned(),
        sha256: file.sha256().to_owned(),
    };
    let url = urls.upload_url(&id, &terms, engine.clock.now(), upload_ttl(engine)).await?;
    Ok((file, url))
}

/// Finishes the upload of `file` (as [`upload_url`] answered it) into field `table.column`:
/// registers it as `uploader`'s once the storage holds exactly its bytes, so that a record may
/// hold it. Finishing twice answers the same file; another principal's finish of a file already
/// registered is refused as no file of theirs.
pub async fn finish_upload(
    engine: &Engine,
    (table, column): (&str, &str),
    file: &File,
    uploader: &Principal,
) -> Result<File, FilesError> {
    let field = field(engine, (table, column))?;
    field.accepts(file.content_type(), file.size())?;
    let urls = urls(engine, &format!("{table}/{column}"))?;
    let id = file.id();
    let started = File::id_time(id).ok_or_else(|| FilesError::NotUploaded(id.to_owned()))?;
    let grace = chrono::Duration::from_std(engine.settings.housekeeping.upload_grace)
        .unwrap_or(chrono::Duration::MAX);
    if engine.clock.now() - started > grace {
        return Err(FilesError::TooLate(id.to_owned()));
    }
    let head = urls.head(id).await?.ok_or_else(|| FilesError::NotUploaded(id.to_owned()))?;
    if let Some(what) = mismatch(&head, file) {
        return Err(FilesError::Mismatch { id: id.to_owned(), what });
    }
    register(engine, field, file, uploader).await
}

/// How what the storage recorded differs from the declared file, if it does.
fn mismatch(head: &BlobHead, file: &File) -> Option<String> {
    if head.size != file.size() {
        return Some(format!("{} bytes stored, {} declared", head.size, file.size()));
    }
    let stored_type = head.content_type.as_deref().unwrap_or_default();
    if !stored_type.eq_ignore_ascii_case(file.content_type()) {
        return Some(format!("type {stored_type:?} stored, {:?} declared", file.content_type()));
    }
    match head.sha256.as_deref() {
        Some(d) if d == file.sha256() => None,
        Some(d) => Some(format!("SHA-256 {d} stored, {} declared", file.sha256())),
        None => Some("the storage recorded no SHA-256 for them".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn file() -> File {
        File::new("f_1", "a.pdf", "application/pdf", 4, DIGEST).unwrap_or_else(|e| panic!("{e}"))
    }

    fn head(size: u64, content_type: &str, sha256: Option<&str>) -> BlobHead {
        BlobHead {
            size,
            content_type: Some(content_type.to_owned()),
            sha256: sha256.map(str::to_owned),
        }
    }

    #[test]
    fn only_the_declared_bytes_match() {
        assert_eq!(mismatch(&head(4, "Application/PDF", Some(DIGEST)), &file()), None);
        let size = mismatch(&head(5, "application/pdf", Some(DIGEST)), &file());
        assert_eq!(size.as_deref(), Some("5 bytes stored, 4 declared"));
        let kind = mismatch(&head(4, "text/html", Some(DIGEST)), &file());
        assert!(kind.is_some_and(|w| w.contains("text/html")));
        let digest = mismatch(&head(4, "application/pdf", Some(&"0".repeat(64))), &file());
        assert!(digest.is_some_and(|w| w.contains("SHA-256")));
        let none = mismatch(&head(4, "application/pdf", None), &file());
        assert!(none.is_some_and(|w| w.contains("no SHA-256")));
    }
}
