//! Rows read through typed structs: a [`columns!`](crate::columns) struct names each column it
//! reads once, as a field of the type it holds, and reads them all from a row. No role reads a
//! column by a name string of its own, so a misspelt column or a wrong type is one line in one
//! declaration, and a test reading that statement's rows finds it.

use chrono::{DateTime, Utc};
use jadpo_core::{Row, SqlValue, StoreError};

/// A type a column is read as.
pub trait Column: Sized {
    /// The value of `column` in `row`.
    fn read(row: &Row, column: &str) -> Result<Self, StoreError>;
}

impl Column for String {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_str(column).map(str::to_owned)
    }
}

impl Column for Option<String> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        Ok(row.get_opt_str(column)?.map(str::to_owned))
    }
}

impl Column for i64 {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_i64(column)
    }
}

impl Column for Option<i64> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_opt_i64(column)
    }
}

/// An integer column read as a narrower or unsigned type, out of range an error naming it.
fn narrowed<T: TryFrom<i64>>(row: &Row, column: &str) -> Result<T, StoreError> {
    T::try_from(row.get_i64(column)?)
        .map_err(|_| StoreError::internal(format!("{column} out of range")))
}

/// A count or a size: an integer column that must not be negative.
impl Column for u64 {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        narrowed(row, column)
    }
}

/// An attempt count, a chain depth: an integer column that fits 32 bits unsigned.
impl Column for u32 {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        narrowed(row, column)
    }
}

impl Column for bool {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_bool(column)
    }
}

impl Column for DateTime<Utc> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_timestamp(column)
    }
}

impl Column for Option<DateTime<Utc>> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_opt_timestamp(column)
    }
}

impl Column for serde_json::Value {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_json(column)
    }
}

/// A column kept as read, decoded later: a payload read as JSON only when its encoding says
/// this build reads it.
impl Column for SqlValue {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get(column).cloned()
    }
}

impl Column for Option<serde_json::Value> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        match row.get(column)? {
            SqlValue::Null => Ok(None),
            value => value.json(column).map(Some),
        }
    }
}

impl Column for Vec<u8> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        row.get_bytes(column).map(<[u8]>::to_vec)
    }
}

impl Column for Option<Vec<u8>> {
    fn read(row: &Row, column: &str) -> Result<Self, StoreError> {
        Ok(row.get_opt_bytes(column)?.map(<[u8]>::to_vec))
    }
}

/// A field's column: its name without the raw-identifier prefix (`r#type` reads `type`).
pub fn name(field: &'static str) -> &'static str {
    field.strip_prefix("r#").unwrap_or(field)
}

/// Declares the columns a statement's rows are read as: `struct Name { column: Type, ... }`,
/// each field read from the column of its name by [`Column`], all of them by `Name::read(row)`.
#[macro_export]
macro_rules! columns {
    ($(
        $(#[$meta:meta])*
        struct $name:ident { $($field:ident : $ty:ty),* $(,)? }
    )*) => {$(
        $(#[$meta])*
        #[derive(Debug)]
        pub(crate) struct $name {
            $(pub(crate) $field: $ty,)*
        }

        impl $name {
            /// Reads the row, each field from the column of its name.
            pub(crate) fn read(row: &jadpo_core::Row) -> Result<Self, jadpo_core::StoreError> {
                use $crate::columns::{Column, name};
                Ok(Self { $($field: Column::read(row, name(stringify!($field)))?,)* })
            }
        }
    )*};
}

/// Reads a struct whose fields are a row's columns, each by [`Column`] as its field's type:
/// `read_row!(row => ScheduleRow { name, next_due_at, ... })`, or `field = column` where the
/// column has another name.
#[macro_export]
macro_rules! read_row {
    ($row:expr => $ty:ident { $($field:ident $(= $column:ident)?),* $(,)? }) => {{
        use $crate::columns::{Column, name};
        let row: &jadpo_core::Row = $row;
        let read = || -> Result<$ty, jadpo_core::StoreError> {
            Ok($ty { $($field: Column::read(row, name($crate::column_of!($field $($column)?)))?,)* })
        };
        read()
    }};
}

/// The column a [`read_row!`] field reads: its own name, or the one given.
#[macro_export]
#[doc(hidden)]
macro_rules! column_of {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $column:ident) => {
        stringify!($column)
    };
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    crate::columns! {
        struct Sample { n: u64, name: Option<String>, at: DateTime<Utc>, r#type: bool }
    }

    fn row(pairs: Vec<(&str, SqlValue)>) -> Row {
        let columns: Arc<[String]> = pairs.iter().map(|(c, _)| (*c).to_owned()).collect();
        Row::new(columns, pairs.into_iter().map(|(_, v)| v).collect())
    }

    #[test]
    fn a_row_is_read_by_its_fields_names_and_types() {
        let at = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap_or_default();
        let read = Sample::read(&row(vec![
            ("type", SqlValue::Int(1)),
            ("at", SqlValue::Timestamp(at)),
            ("name", SqlValue::Null),
            ("n", SqlValue::Int(3)),
        ]));
        let read = read.unwrap_or_else(|e| panic!("read: {e}"));
        assert_eq!((read.n, read.name, read.at, read.r#type), (3, None, at, true));
    }

    #[derive(Debug, PartialEq)]
    struct Model {
        n: u64,
        when: DateTime<Utc>,
    }

    #[test]
    fn a_model_is_read_field_by_field_with_its_columns_renamed_where_asked() {
        let at = DateTime::from_timestamp_millis(5).unwrap_or_default();
        let r = row(vec![("n", SqlValue::Int(2)), ("at", SqlValue::Int(5))]);
        let read = crate::read_row!(&r => Model { n, when = at });
        assert_eq!(read.ok(), Some(Model { n: 2, when: at }));
        let missing = crate::read_row!(&r => Model { n, when });
        assert!(missing.is_err_and(|e| e.to_string().contains("\"when\"")));
    }

    #[test]
    fn a_missing_column_a_wrong_type_and_a_negative_count_are_named() {
        let at = SqlValue::Timestamp(DateTime::from_timestamp_millis(0).unwrap_or_default());
        let cases = [
            (
                vec![("n", SqlValue::Int(1)), ("at", at.clone()), ("type", SqlValue::Bool(true))],
                "name",
            ),
            (
                vec![
                    ("n", SqlValue::Text("x".into())),
                    ("name", SqlValue::Null),
                    ("at", at.clone()),
                    ("type", SqlValue::Bool(true)),
                ],
                "\"n\"",
            ),
            (
                vec![
                    ("n", SqlValue::Int(-1)),
                    ("name", SqlValue::Null),
                    ("at", at),
                    ("type", SqlValue::Bool(true)),
                ],
                "n out of range",
            ),
        ];
        for (pairs, named) in cases {
            let err = Sample::read(&row(pairs)).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(named), "{err:?} should name {named}");
        }
    }
}
