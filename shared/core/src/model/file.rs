//! `File`: a stored file as an application keeps it in its own rows.
//!
//! A record holds the file's id — which names its bytes in blob storage — and what a reader
//! needs without fetching the bytes: the name it was uploaded under, its content type, its size
//! and its SHA-256 digest. One column holds the whole value, so a row cannot name bytes without
//! saying what they are, and the reference-count trigger finds the id in one place:
//!
//! | dialect | column | value |
//! |---|---|---|
//! | PostgreSQL | `JSONB` | `{"id", "name", "content_type", "size", "sha256"}` |
//! | SQLite | `TEXT` holding that JSON object | the same |
//!
//! `NULL` is "no file". Every value is checked when it is made and when it is read back
//! ([`File::from_column`]), so a row holding something else is an error, not a file.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Clock;
use crate::sql::SqlValue;

/// The longest name a file keeps, in characters.
pub const NAME_MAX: usize = 255;
/// The longest content type, in characters (RFC 6838 allows 127 on each side of the slash).
pub(crate) const CONTENT_TYPE_MAX: usize = 255;
/// The longest id, in characters.
pub(crate) const ID_MAX: usize = 64;

/// Why a file value was refused; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The id is empty, too long, or has characters other than letters, digits, `-` and `_`.
    #[error("a file id has 1 to {ID_MAX} letters, digits, '-' or '_'; got {0:?}")]
    BadId(String),
    /// The name is empty, too long, or holds a path separator or a control character.
    #[error(
        "a file name has 1 to {NAME_MAX} characters and no '/', '\\\\' or control character; got \
         {0:?}"
    )]
    BadName(String),
    /// The content type is not `type/subtype` in RFC 6838's characters.
    #[error("{0:?} is not a content type (type/subtype, e.g. application/pdf)")]
    BadContentType(String),
    /// The digest is not 64 lower-case hexadecimal characters.
    #[error("a file's sha256 is 64 lower-case hexadecimal characters; got {0:?}")]
    BadDigest(String),
    /// The column held something that is not a file's JSON object.
    #[error("the column does not hold a file: {0}")]
    NotAFile(String),
}

/// A stored file, as a record holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Unchecked")]
pub struct File {
    id: String,
    name: String,
    content_type: String,
    size: u64,
    sha256: String,
}

/// A file's fields before they are checked (what a column or a request holds).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unchecked {
    id: String,
    name: String,
    content_type: String,
    size: u64,
    sha256: String,
}

impl TryFrom<Unchecked> for File {
    type Error = FileError;

    fn try_from(u: Unchecked) -> Result<Self, FileError> {
        Self::new(&u.id, &u.name, &u.content_type, u.size, &u.sha256)
    }
}

/// The `Content-Disposition` a download of a file named `name` carries: an attachment (never shown
/// in place), its name percent-encoded for `filename*` (RFC 8187: every byte but letters, digits
/// and `-._~`).
pub fn attachment(name: &str) -> String {
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename*=UTF-8''{encoded}")
}

/// Whether `id` may name a file (and its blob): 1 to [`ID_MAX`] letters, digits, `-` and `_`, which
/// keeps it a single path segment and a plain S3 key.
pub fn id_ok(id: &str) -> bool {
    (1..=ID_MAX).contains(&id.len())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn name_ok(name: &str) -> bool {
    let chars = name.chars().count();
    (1..=NAME_MAX).contains(&chars)
        && !name.chars().any(|c| c == '/' || c == '\\' || c.is_control())
        && name.trim() == name
}

/// RFC 6838's `restricted-name`: a letter or digit, then letters, digits and ``!#$&-^_.+``.
fn restricted_name(part: &str) -> bool {
    let mut chars = part.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
        && part.len() <= 127
}

pub(crate) fn content_type_ok(content_type: &str) -> bool {
    content_type.len() <= CONTENT_TYPE_MAX
        && content_type
            .split_once('/')
            .is_some_and(|(t, s)| restricted_name(t) && restricted_name(s))
}

fn digest_ok(sha256: &str) -> bool {
    sha256.len() == 64 && sha256.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

impl File {
    /// A file value, each field checked; the content type is kept in lower case.
    pub fn new(
        id: &str,
        name: &str,
        content_type: &str,
        size: u64,
        sha256: &str,
    ) -> Result<Self, FileError> {
        if !id_ok(id) {
            return Err(FileError::BadId(id.to_owned()));
        }
        if !name_ok(name) {
            return Err(FileError::BadName(name.to_owned()));
        }
        let content_type = content_type.to_ascii_lowercase();
        if !content_type_ok(&content_type) {
            return Err(FileError::BadContentType(content_type));
        }
        if !digest_ok(sha256) {
            return Err(FileError::BadDigest(sha256.to_owned()));
        }
        Ok(Self {
            id: id.to_owned(),
            name: name.to_owned(),
            content_type,
            size,
            sha256: sha256.to_owned(),
        })
    }

    /// A new file id (`f_` and a time-ordered UUID), for bytes about to be uploaded.
    pub fn new_id(clock: &dyn Clock) -> String {
        format!("f_{}", crate::id::new_id(clock).simple())
    }

    /// When the id [`new_id`](Self::new_id) made was made (its UUID's time, to the
    /// millisecond); `None` for an id it did not make.
    pub fn id_time(id: &str) -> Option<DateTime<Utc>> {
        let hex = id.strip_prefix("f_").filter(|h| {
            h.len() == 32 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })?;
        let ms = i64::from_str_radix(hex.get(..12)?, 16).ok()?;
        DateTime::from_timestamp_millis(ms)
    }

    /// The lowest id [`new_id`](Self::new_id) could make at `t`, as a listing's start: every id
    /// made at `t` or later sorts after it.
    pub fn id_floor(t: DateTime<Utc>) -> String {
        format!("f_{:012x}", t.timestamp_millis().max(0))
    }

    /// The id naming its bytes.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name it was uploaded under (a display name, never a path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its content type, lower case.
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its SHA-256 digest, lower-case hexadecimal.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The value its column holds.
    pub fn to_column(&self) -> SqlValue {
        SqlValue::Json(serde_json::json!({
            "id": self.id, "name": self.name, "content_type": self.content_type,
            "size": self.size, "sha256": self.sha256,
        }))
    }

    /// The file a column holds, checked; `None` for SQL `NULL`. SQLite gives the JSON as text.
    pub fn from_column(value: &Value) -> Result<Option<Self>, FileError> {
        let parsed = match value {
            Value::Null => return Ok(None),
            Value::String(text) => {
                serde_json::from_str(text).map_err(|e| FileError::NotAFile(e.to_string()))?
            }
            other => other.clone(),
        };
        match serde_json::from_value::<Unchecked>(parsed) {
            Ok(u) => Self::try_from(u).map(Some),
            Err(e) => Err(FileError::NotAFile(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;

    const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn a_download_is_an_attachment_with_its_name_encoded() {
        assert_eq!(attachment("a-b_c.pdf"), "attachment; filename*=UTF-8''a-b_c.pdf");
        assert_eq!(
            attachment("in \"v\"é;.pdf"),
            "attachment; filename*=UTF-8''in%20%22v%22%C3%A9%3B.pdf"
        );
    }

    fn invoice() -> File {
        File::new("f_1", "invoice 42.pdf", "Application/PDF", 1234, DIGEST)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_file_round_trips_through_its_column_on_both_dialects() {
        let file = invoice();
        assert_eq!(file.content_type(), "application/pdf", "kept in lower case");
        let SqlValue::Json(column) = file.to_column() else { panic!("a file is a JSON column") };
        assert_eq!(
            column,
            json!({"id": "f_1", "name": "invoice 42.pdf", "content_type": "application/pdf",
                   "size": 1234, "sha256": DIGEST})
        );
        // PostgreSQL gives the JSONB value, SQLite the JSON text.
        assert_eq!(File::from_column(&column), Ok(Some(file.clone())));
        assert_eq!(File::from_column(&Value::String(column.to_string())), Ok(Some(file)));
        assert_eq!(File::from_column(&Value::Null), Ok(None));
    }

    #[test]
    fn every_bad_field_is_refused_saying_which() {
        let make = |id: &str, name: &str, ct: &str, sha: &str| File::new(id, name, ct, 1, sha);
        let long_id = "a".repeat(ID_MAX + 1);
        for id in ["", "f/1", "f 1", long_id.as_str()] {
            assert_eq!(
                make(id, "a.pdf", "application/pdf", DIGEST),
                Err(FileError::BadId(id.into()))
            );
        }
        let long_name = "n".repeat(NAME_MAX + 1);
        for name in ["", "../etc/passwd", "a\\b", "bell\u{7}", " padded", long_name.as_str()] {
            assert_eq!(
                make("f", name, "application/pdf", DIGEST),
                Err(FileError::BadName(name.into()))
            );
        }
        assert!(make("f", &"n".repeat(NAME_MAX), "text/plain", DIGEST).is_ok());
        for ct in ["pdf", "application/", "/pdf", "text/plain; charset=utf-8", "a b/c"] {
            assert!(
                matches!(make("f", "a", ct, DIGEST), Err(FileError::BadContentType(_))),
                "{ct:?} was taken"
            );
        }
        for sha in ["", "abc", &DIGEST.to_uppercase(), &format!("{}0", DIGEST)] {
            assert_eq!(make("f", "a", "text/plain", sha), Err(FileError::BadDigest(sha.into())));
        }
        assert_eq!(
            FileError::BadContentType("pdf".into()).to_string(),
            "\"pdf\" is not a content type (type/subtype, e.g. application/pdf)"
        );
    }

    #[test]
    fn a_column_holding_something_else_is_not_a_file() {
        for bad in [
            json!("not json"),
            json!({"id": "f_1"}),
            json!({"id": "f_1", "name": "a", "content_type": "text/plain", "size": -1, "sha256": DIGEST}),
            json!({"id": "f_1", "name": "a", "content_type": "text/plain", "size": 1, "sha256": DIGEST, "extra": 1}),
            json!([1, 2]),
        ] {
            assert!(matches!(File::from_column(&bad), Err(FileError::NotAFile(_))), "{bad}");
        }
        // A value shaped right but with a bad field is refused by that field's check.
        let bad_name = json!({"id": "f_1", "name": "a/b", "content_type": "text/plain", "size": 1, "sha256": DIGEST});
        assert_eq!(File::from_column(&bad_name), Err(FileError::BadName("a/b".into())));
        let decoded: Result<File, _> = serde_json::from_value(bad_name);
        assert!(decoded.is_err(), "deserializing skipped the checks");
    }

    #[test]
    fn new_ids_are_valid_and_follow_the_clock() {
        let clock = ManualClock::new(
            chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
        );
        let first = File::new_id(&clock);
        clock.advance(chrono::Duration::milliseconds(1));
        let second = File::new_id(&clock);
        assert!(first.starts_with("f_") && first.len() == 34, "{first}");
        assert!(first < second);
        assert!(File::new(&first, "a", "text/plain", 0, DIGEST).is_ok());
        let t = clock.now();
        assert_eq!(File::id_time(&second), Some(t));
        assert_eq!(File::id_time(&first), Some(t - chrono::Duration::milliseconds(1)));
        assert!(File::id_floor(t) < second && File::id_floor(t) > first, "the floor splits them");
        for foreign in ["f_1", "invoice.pdf", &first.to_uppercase(), &format!("{first}0")] {
            assert_eq!(File::id_time(foreign), None, "{foreign} is no id new_id makes");
        }
    }
}
