//! Portable SQL values and rows.
//!
//! An action writes its own rows through the same transaction handle as the runtime, in plain
//! SQL for its store's dialect. Parameters are always bound (never spliced into the text) and are
//! written `$1`, `$2`, ... in both dialects; the SQLite adapter maps them to SQLite's `?1`, `?2`.
//!
//! Values cross the port as [`SqlValue`]. Where the dialects store a type differently (PostgreSQL
//! `TIMESTAMPTZ` and `JSONB`, SQLite epoch milliseconds and JSON text) the typed getters on
//! [`Row`] read either form, so portable code reads what it wrote.

use chrono::{DateTime, Utc};
use serde_json::Value as Json;

use crate::error::StoreError;

pub use jadpo_schema::Dialect;

/// Whether `s` is a plain lower-case SQL identifier (at most 63 bytes, PostgreSQL's limit),
/// safe to interpolate into a statement where no parameter can stand (a table's name).
pub fn is_plain_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `name`, when it is a plain identifier; else a clear refusal.
pub fn identifier(name: &str) -> Result<&str, crate::error::StoreError> {
    if is_plain_identifier(name) {
        Ok(name)
    } else {
        Err(crate::error::StoreError::invalid(format!(
            "{name:?} is not a plain lower-case SQL identifier"
        )))
    }
}

/// A value bound to a statement or read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// SQL `NULL`.
    Null,
    /// A boolean (SQLite stores 0/1).
    Bool(bool),
    /// An integer; bound to PostgreSQL `smallint`/`integer`/`bigint` with a range check.
    Int(i64),
    /// A double-precision float.
    Float(f64),
    /// Text.
    Text(String),
    /// Raw bytes.
    Bytes(Vec<u8>),
    /// A JSON document (PostgreSQL `json`/`jsonb`; SQLite JSON text).
    Json(Json),
    /// An instant (PostgreSQL `timestamptz`; SQLite epoch milliseconds).
    Timestamp(DateTime<Utc>),
}

impl SqlValue {
    /// The kind of value, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "bool",
            Self::Int(_) => "int",
            Self::Float(_) => "float",
            Self::Text(_) => "text",
            Self::Bytes(_) => "bytes",
            Self::Json(_) => "json",
            Self::Timestamp(_) => "timestamp",
        }
    }

    /// The JSON document this value holds (PostgreSQL `jsonb`, SQLite JSON text), read from
    /// `column` (named in the error).
    pub fn json(&self, column: &str) -> Result<Json, StoreError> {
        match self {
            SqlValue::Json(v) => Ok(v.clone()),
            SqlValue::Text(text) => serde_json::from_str(text).map_err(|e| {
                StoreError::invalid(format!("column {column:?} is not valid JSON: {e}"))
            }),
            other => Err(StoreError::invalid(format!(
                "column {column:?} holds {}, not json",
                other.kind()
            ))),
        }
    }

    /// Whether this is SQL `NULL`.
    pub fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }
}

macro_rules! from_value {
    ($($ty:ty => $variant:ident $(via $conv:expr)?),* $(,)?) => {$(
        impl From<$ty> for SqlValue {
            fn from(v: $ty) -> Self {
                SqlValue::$variant($($conv)?(v))
            }
        }
    )*};
}

from_value! {
    bool => Bool,
    i64 => Int,
    i32 => Int via i64::from,
    u32 => Int via i64::from,
    f64 => Float,
    String => Text,
    &str => Text via str::to_owned,
    Vec<u8> => Bytes,
    Json => Json,
    DateTime<Utc> => Timestamp,
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(SqlValue::Null, Into::into)
    }
}

/// One result row: column names and their values, in select order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    columns: std::sync::Arc<[String]>,
    values: Vec<SqlValue>,
}

impl Row {
    /// A row from its columns and values (adapters build these).
    pub fn new(columns: std::sync::Arc<[String]>, values: Vec<SqlValue>) -> Self {
        Self { columns, values }
    }

    /// Column names, in select order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Values, in select order.
    pub fn values(&self) -> &[SqlValue] {
        &self.values
    }

    /// The raw value of `column`.
    pub fn get(&self, column: &str) -> Result<&SqlValue, StoreError> {
        self.columns
            .iter()
            .position(|c| c == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| StoreError::invalid(format!("no column {column:?} in the result row")))
    }

    fn mismatch(&self, column: &str, wanted: &str, got: &SqlValue) -> StoreError {
        StoreError::invalid(format!("column {column:?} holds {}, not {wanted}", got.kind()))
    }

    /// An integer column (SQLite booleans read as 0/1).
    pub fn get_i64(&self, column: &str) -> Result<i64, StoreError> {
        match self.get(column)? {
            SqlValue::Int(v) => Ok(*v),
            other => Err(self.mismatch(column, "int", other)),
        }
    }

    /// A nullable integer column.
    pub fn get_opt_i64(&self, column: &str) -> Result<Option<i64>, StoreError> {
        match self.get(column)? {
            SqlValue::Null => Ok(None),
            _ => self.get_i64(column).map(Some),
        }
    }

    /// A text column.
    pub fn get_str(&self, column: &str) -> Result<&str, StoreError> {
        match self.get(column)? {
            SqlValue::Text(v) => Ok(v),
            other => Err(self.mismatch(column, "text", other)),
        }
    }

    /// A nullable text column.
    pub fn get_opt_str(&self, column: &str) -> Result<Option<&str>, StoreError> {
        match self.get(column)? {
            SqlValue::Null => Ok(None),
            _ => self.get_str(column).map(Some),
        }
    }

    /// A bytes column (PostgreSQL `bytea`, SQLite `BLOB`).
    pub fn get_bytes(&self, column: &str) -> Result<&[u8], StoreError> {
        match self.get(column)? {
            SqlValue::Bytes(v) => Ok(v),
            other => Err(self.mismatch(column, "bytes", other)),
        }
    }

    /// A nullable bytes column.
    pub fn get_opt_bytes(&self, column: &str) -> Result<Option<&[u8]>, StoreError> {
        match self.get(column)? {
            SqlValue::Null => Ok(None),
            _ => self.get_bytes(column).map(Some),
        }
    }

    /// A boolean column (PostgreSQL `boolean`, SQLite 0/1).
    pub fn get_bool(&self, column: &str) -> Result<bool, StoreError> {
        match self.get(column)? {
            SqlValue::Bool(v) => Ok(*v),
            SqlValue::Int(v) => Ok(*v != 0),
            other => Err(self.mismatch(column, "bool", other)),
        }
    }

    /// A JSON column (PostgreSQL `jsonb`, SQLite JSON text).
    pub fn get_json(&self, column: &str) -> Result<Json, StoreError> {
        self.get(column)?.json(column)
    }

    /// A timestamp column (PostgreSQL `timestamptz`, SQLite epoch milliseconds).
    pub fn get_timestamp(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        match self.get(column)? {
            SqlValue::Timestamp(v) => Ok(*v),
            SqlValue::Int(ms) => DateTime::from_timestamp_millis(*ms).ok_or_else(|| {
                StoreError::invalid(format!(
                    "column {column:?} holds {ms}, out of range for a time"
                ))
            }),
            other => Err(self.mismatch(column, "timestamp", other)),
        }
    }

    /// A nullable timestamp column.
    pub fn get_opt_timestamp(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        match self.get(column)? {
            SqlValue::Null => Ok(None),
            _ => self.get_timestamp(column).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: Vec<(&str, SqlValue)>) -> Row {
        let columns: Vec<String> = pairs.iter().map(|(c, _)| (*c).to_owned()).collect();
        Row::new(columns.into(), pairs.into_iter().map(|(_, v)| v).collect())
    }

    #[test]
    fn typed_getters_read_both_dialects_forms() {
        let at = DateTime::from_timestamp_millis(1_700_000_000_123).unwrap_or_default();
        let pg = row(vec![
            ("at", SqlValue::Timestamp(at)),
            ("doc", SqlValue::Json(serde_json::json!({"a": 1}))),
            ("flag", SqlValue::Bool(true)),
        ]);
        let lite = row(vec![
            ("at", SqlValue::Int(1_700_000_000_123)),
            ("doc", SqlValue::Text(r#"{"a":1}"#.into())),
            ("flag", SqlValue::Int(1)),
        ]);
        for r in [pg, lite] {
            assert_eq!(r.get_timestamp("at").ok(), Some(at));
            assert_eq!(r.get_json("doc").ok(), Some(serde_json::json!({"a": 1})));
            assert_eq!(r.get_bool("flag").ok(), Some(true));
        }
    }

    #[test]
    fn wrong_types_and_missing_columns_are_clear_errors() {
        let r = row(vec![("n", SqlValue::Text("x".into())), ("z", SqlValue::Null)]);
        let err = r.get_i64("n").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("holds text, not int"), "{err}");
        let err = r.get("missing").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("no column \"missing\""), "{err}");
        assert_eq!(r.get_opt_i64("z").ok(), Some(None));
        let err = row(vec![("j", SqlValue::Text("{".into()))]).get_json("j").err();
        assert!(err.is_some());
    }

    #[test]
    fn conversions_build_the_expected_variants() {
        assert_eq!(SqlValue::from(3_i32), SqlValue::Int(3));
        assert_eq!(SqlValue::from("a"), SqlValue::Text("a".into()));
        assert_eq!(SqlValue::from(None::<i64>), SqlValue::Null);
        assert_eq!(SqlValue::from(Some(true)), SqlValue::Bool(true));
    }
}
