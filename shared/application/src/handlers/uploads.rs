//! The check an action makes on a file a request names before it keeps it in a record: that
//! this principal uploaded it, as it now says it is, and that its bytes are still kept.
//!
//! Why: a file value is plain JSON in the request, so without this check a caller could attach
//! a file another user uploaded (whose id it learned), or the right id with another name or
//! type than was uploaded, which every later reader would be shown. The upload recorded who sent
//! what (`jadpo_files`), so the record keeps only what that principal uploaded.

use serde_json::Value;

use super::{HandlerContext, HandlerError};
use jadpo_core::model::file::File;
use jadpo_core::model::file_field::{FileState, StoredFile};
use jadpo_core::model::principal::Principal;

/// Why a named file is not one the caller may keep in a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadRefused {
    /// The value is not a file's JSON object.
    #[error("not a file: {0}")]
    NotAFile(String),
    /// No upload of this principal's is kept under the id (none, someone else's, one no upload
    /// recorded, or one whose bytes are deleted): alike, so ids cannot be probed.
    #[error("file {0} is not an upload of yours that is still kept: upload it first")]
    NotYours(String),
    /// The caller's upload, but the value says something else of it.
    #[error("file {id} was uploaded with {field} {registered}, not {given}")]
    Altered {
        /// The file.
        id: String,
        /// Which field differs.
        field: &'static str,
        /// As uploaded.
        registered: String,
        /// As the request says.
        given: String,
    },
}

impl From<UploadRefused> for HandlerError {
    fn from(e: UploadRefused) -> Self {
        HandlerError::rejected(422, "Not your upload", e.to_string())
    }
}

/// Whether `principal` may keep `file` in a record, given its row `stored`.
pub fn check_upload(
    stored: Option<&StoredFile>,
    file: &File,
    principal: Option<&Principal>,
) -> Result<(), UploadRefused> {
    let not_yours = || UploadRefused::NotYours(file.id().to_owned());
    let stored = stored.ok_or_else(not_yours)?;
    let owner = principal.map(Principal::owner).ok_or_else(not_yours)?;
    if stored.uploader.as_deref() != Some(owner.as_str()) || stored.state != FileState::Live {
        return Err(not_yours());
    }
    let registered = stored.registered.as_ref().ok_or_else(not_yours)?;
    let fields: [(&'static str, String, String); 4] = [
        ("name", registered.name().to_owned(), file.name().to_owned()),
        ("content type", registered.content_type().to_owned(), file.content_type().to_owned()),
        ("size", registered.size().to_string(), file.size().to_string()),
        ("sha256", registered.sha256().to_owned(), file.sha256().to_owned()),
    ];
    match fields.into_iter().find(|(_, r, g)| r != g) {
        Some((field, registered, given)) => {
            Err(UploadRefused::Altered { id: file.id().to_owned(), field, registered, given })
        }
        None => Ok(()),
    }
}

impl HandlerContext<'_> {
    /// The file `value` names (a file's JSON object as its upload answered it, or `null` for
    /// none), once checked against its upload: uploaded by this request's principal, with the
    /// same name, content type, size and digest, its bytes still kept. Read in the handler's
    /// transaction (which it opens). Anything else is refused with a `422` naming why.
    pub async fn uploaded_file(&mut self, value: &Value) -> Result<Option<File>, HandlerError> {
        let file = File::from_column(value).map_err(|e| UploadRefused::NotAFile(e.to_string()))?;
        let Some(file) = file else { return Ok(None) };
        let files = self.files.ok_or_else(|| {
            HandlerError::Failed("this handler's store keeps no files: declare a file field".into())
        })?;
        let principal = self.principal;
        let stored = files.file_get_in(self.tx().await?, file.id()).await?;
        check_upload(stored.as_ref(), &file, principal)?;
        Ok(Some(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn file(name: &str, size: u64) -> File {
        File::new("f_1", name, "application/pdf", size, DIGEST).unwrap_or_else(|e| panic!("{e}"))
    }

    fn row(uploader: Option<&str>, state: FileState) -> StoredFile {
        StoredFile {
            file_id: "f_1".into(),
            refs: 0,
            state,
            unheld_since: None,
            updated_at: None,
            uploader: uploader.map(str::to_owned),
            registered: uploader.map(|_| file("a.pdf", 4)),
        }
    }

    #[test]
    fn only_the_uploader_keeps_the_file_as_it_was_uploaded() {
        let alice = Principal::User("alice".into());
        let bob = Principal::User("bob".into());
        let mine = row(Some("user:alice"), FileState::Live);
        assert_eq!(check_upload(Some(&mine), &file("a.pdf", 4), Some(&alice)), Ok(()));
        let not_yours = Err(UploadRefused::NotYours("f_1".into()));
        for (stored, who) in [
            (Some(&mine), Some(&bob)),
            (Some(&mine), None),
            (None, Some(&alice)),
            (Some(&row(None, FileState::Live)), Some(&alice)),
            (Some(&row(Some("user:alice"), FileState::Deleted)), Some(&alice)),
            (Some(&row(Some("service:alice"), FileState::Live)), Some(&alice)),
        ] {
            assert_eq!(
                check_upload(stored, &file("a.pdf", 4), who),
                not_yours,
                "{stored:?} {who:?}"
            );
        }
        let renamed = check_upload(Some(&mine), &file("b.pdf", 4), Some(&alice));
        assert!(
            matches!(&renamed, Err(UploadRefused::Altered { field: "name", .. })),
            "{renamed:?}"
        );
        let resized = check_upload(Some(&mine), &file("a.pdf", 5), Some(&alice));
        let said = resized.map_err(|e| e.to_string());
        assert_eq!(said, Err("file f_1 was uploaded with size 4, not 5".to_owned()));
    }
}
