//! `FileField`: a column of an application's table that holds a [`File`](super::file::File), as
//! the application declares it, and `StoredFile`, what `jadpo_files` keeps about each file.
//!
//! Why declared: the runtime keeps, per stored file, how many fields hold it (`jadpo_files`), so
//! that housekeeping can delete the bytes once no record does. A trigger on each declared column
//! keeps that count in the transaction that changes the row, whoever writes it and however, in
//! the way the audit trail is kept. The declaration also carries what an upload into the field
//! may be: its largest size and the content types it takes.
//!
//! A file's life, as `jadpo_files.state` records it:
//!
//! | state | meaning | next |
//! |---|---|---|
//! | `live` | its bytes are stored; `refs` fields hold it (0: none yet, or none any more) | `deleting` |
//! | `deleting` | housekeeping claimed it (no field held it for the grace period) and is deleting its bytes | `deleted` |
//! | `deleted` | its bytes are gone; a row that names it again is refused | removed after the tombstone period |
//!
//! A trigger refuses a new reference to a file that is not `live`, so no committed row ever names
//! bytes that are being or have been deleted.

use chrono::{DateTime, Utc};

use super::file::{File, FileError, content_type_ok};
use crate::sql::is_plain_identifier;

/// The largest upload a field takes unless its declaration says otherwise: 10 MiB.
pub(crate) const DEFAULT_MAX_SIZE: u64 = 10 * 1024 * 1024;

/// A declared column holding a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileField {
    /// The store its table lives in.
    pub store: String,
    /// The table (with an `id` column identifying the record).
    pub table: String,
    /// The column: PostgreSQL `JSONB`, SQLite `TEXT` holding the file's JSON object, or `NULL`.
    pub column: String,
    /// The largest upload it takes, in bytes.
    pub max_size: u64,
    /// The content types it takes (`type/subtype`, or `type/*`); empty: any.
    pub content_types: Vec<String>,
    /// The table's column holding the id of the user each record belongs to: a user downloads
    /// a file only through a record of theirs. `None`: only services download it.
    pub owner_column: Option<String>,
}

/// Why an upload does not fit its field; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// Larger than the field takes.
    #[error("{field} takes files of at most {max} bytes; this one has {size}")]
    TooLarge {
        /// `table.column`.
        field: String,
        /// Its limit.
        max: u64,
        /// The upload's size.
        size: u64,
    },
    /// A content type the field does not take.
    #[error("{field} takes {accepted}; this file is {got}")]
    WrongType {
        /// `table.column`.
        field: String,
        /// The types it takes, comma-separated.
        accepted: String,
        /// The upload's type.
        got: String,
    },
    /// The file's own fields are not valid.
    #[error(transparent)]
    File(#[from] FileError),
}

impl FileField {
    /// Column `column` of `table` in `store` holds a file; uploads of any type up to
    /// [`DEFAULT_MAX_SIZE`].
    pub fn new(store: &str, table: &str, column: &str) -> Self {
        Self {
            store: store.to_owned(),
            table: table.to_owned(),
            column: column.to_owned(),
            max_size: DEFAULT_MAX_SIZE,
            content_types: Vec::new(),
            owner_column: None,
        }
    }

    /// The largest upload it takes, in bytes.
    #[must_use]
    pub fn max_size(mut self, bytes: u64) -> Self {
        self.max_size = bytes;
        self
    }

    /// The content types it takes (`application/pdf`, `image/*`).
    #[must_use]
    pub fn content_types(mut self, types: &[&str]) -> Self {
        self.content_types = types.iter().map(|t| t.to_ascii_lowercase()).collect();
        self
    }

    /// The table's column holding the id of the user each record belongs to: a user may
    /// download the file of a record of theirs.
    #[must_use]
    pub fn owned_by(mut self, column: &str) -> Self {
        self.owner_column = Some(column.to_owned());
        self
    }

    /// `table.column`, as errors and the API name the field.
    pub fn name(&self) -> String {
        format!("{}.{}", self.table, self.column)
    }

    /// What a declaration gets wrong, if anything: identifiers that are not plain (the trigger
    /// is generated DDL), `id` as the column, a zero limit, or a content type that is not one.
    pub fn problem(&self) -> Option<String> {
        let names = [Some(&self.table), Some(&self.column), self.owner_column.as_ref()];
        if let Some(bad) = names.into_iter().flatten().find(|n| !is_plain_identifier(n)) {
            return Some(format!("{bad:?} is not a plain lower-case SQL identifier"));
        }
        if self.column == "id" {
            return Some("`id` identifies the record and cannot hold a file".to_owned());
        }
        if self.max_size == 0 {
            return Some(format!("{} takes files of at most 0 bytes", self.name()));
        }
        let bad_type = self.content_types.iter().find(|t| !type_pattern_ok(t));
        bad_type.map(|t| format!("{t:?} is not a content type (type/subtype or type/*)"))
    }

    /// Whether an upload of `size` bytes typed `content_type` fits the field.
    pub fn accepts(&self, content_type: &str, size: u64) -> Result<(), FieldError> {
        if size > self.max_size {
            return Err(FieldError::TooLarge { field: self.name(), max: self.max_size, size });
        }
        let got = content_type.to_ascii_lowercase();
        let base = got.split(';').next().unwrap_or_default().trim();
        if self.content_types.is_empty() || self.content_types.iter().any(|t| matches(t, base)) {
            return Ok(());
        }
        Err(FieldError::WrongType {
            field: self.name(),
            accepted: self.content_types.join(", "),
            got: content_type.to_owned(),
        })
    }
}

fn type_pattern_ok(pattern: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(top) => content_type_ok(&format!("{top}/x")),
        None => content_type_ok(pattern),
    }
}

fn matches(pattern: &str, content_type: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(top) => content_type.split('/').next() == Some(top),
        None => pattern == content_type,
    }
}

/// A file's state in `jadpo_files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// Bytes stored; held by `refs` fields.
    Live,
    /// Claimed by housekeeping; its bytes are being deleted.
    Deleting,
    /// Bytes deleted; kept as a tombstone so that a stale reference is refused.
    Deleted,
}

impl FileState {
    /// As the column keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Deleting => "deleting",
            Self::Deleted => "deleted",
        }
    }

    /// Reads [`FileState::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Live, Self::Deleting, Self::Deleted].into_iter().find(|s| s.as_str() == text)
    }
}

/// One row of `jadpo_files`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// The file's id (its blob's name).
    pub file_id: String,
    /// How many fields hold it.
    pub refs: i64,
    /// Its state.
    pub state: FileState,
    /// When housekeeping first saw no field holding it (cleared by a new reference); `None`
    /// while held, or not yet seen.
    pub unheld_since: Option<DateTime<Utc>>,
    /// When the row was written by an upload or a trigger (or its state last changed).
    pub updated_at: Option<DateTime<Utc>>,
    /// Who uploaded it (the principal's owner form, `user:ID` or `service:NAME`); `None` for a
    /// row an upload did not write (one written before uploaders were recorded, or a reference
    /// to an id no upload registered).
    pub uploader: Option<String>,
    /// The file as its upload registered it (name, type, size, digest); `None` as for
    /// `uploader`.
    pub registered: Option<File>,
}

/// How much one uploader may keep uploaded at once: files not yet deleted (held by a record or
/// not yet), counted by number and by bytes. Uploads no record takes are deleted after the
/// upload's grace and stop counting then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// The most files.
    pub files: u64,
    /// The most bytes, summed over those files.
    pub bytes: u64,
}

impl Quota {
    /// No limit (services, which act for the application itself).
    pub const NONE: Self = Self { files: u64::MAX, bytes: u64::MAX };

    /// Whether one more file of `size` bytes fits beside `usage`.
    pub fn admits(&self, usage: Usage, size: u64) -> bool {
        usage.files < self.files && usage.bytes.saturating_add(size) <= self.bytes
    }
}

impl Default for Quota {
    /// 1,000 files and 1 GiB per user.
    fn default() -> Self {
        Self { files: 1_000, bytes: 1 << 30 }
    }
}

/// What one uploader keeps uploaded: its files not yet deleted, and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// How many.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_takes_what_it_declares_and_names_what_it_refuses() {
        let field = FileField::new("main", "orders", "invoice")
            .max_size(100)
            .content_types(&["application/pdf", "image/*"]);
        assert_eq!(field.problem(), None);
        assert_eq!(field.accepts("application/pdf", 100), Ok(()));
        assert_eq!(field.accepts("Image/PNG; q=1", 1), Ok(()));
        let big = field.accepts("application/pdf", 101).map_err(|e| e.to_string());
        assert_eq!(
            big,
            Err("orders.invoice takes files of at most 100 bytes; this one has 101".into())
        );
        let wrong = field.accepts("text/html", 1).map_err(|e| e.to_string());
        assert_eq!(
            wrong,
            Err("orders.invoice takes application/pdf, image/*; this file is text/html".into())
        );
        assert_eq!(FileField::new("main", "t", "c").accepts("x/y", DEFAULT_MAX_SIZE), Ok(()));
    }

    #[test]
    fn a_bad_declaration_is_named() {
        let problem = |f: FileField| f.problem().unwrap_or_default();
        assert!(problem(FileField::new("main", "Orders", "c")).contains("plain lower-case"));
        assert!(problem(FileField::new("main", "t", "c; drop")).contains("plain lower-case"));
        let owned = FileField::new("main", "t", "c").owned_by("owner'--");
        assert!(problem(owned).contains("plain lower-case"));
        assert!(problem(FileField::new("main", "t", "id")).contains("identifies the record"));
        assert!(problem(FileField::new("main", "t", "c").max_size(0)).contains("at most 0"));
        let typed = FileField::new("main", "t", "c").content_types(&["pdf"]);
        assert!(problem(typed).contains("not a content type"));
    }

    #[test]
    fn states_read_back() {
        for s in [FileState::Live, FileState::Deleting, FileState::Deleted] {
            assert_eq!(FileState::parse(s.as_str()), Some(s));
        }
        assert_eq!(FileState::parse("gone"), None);
    }
}
