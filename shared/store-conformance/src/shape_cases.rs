//! The `jadpo_*` tables' physical shapes: every table this release's migrations create, and each
//! one's columns (name, type as the database prints it, NOT NULL, default), primary key, foreign
//! keys and indexes, compared exactly with the reference in [`crate::system_tables`]. A change
//! to a system table (a moved statement, a later migration) fails here until the reference is
//! changed with it, on purpose.

use std::collections::BTreeSet;

use jadpo_schema::table::TableSchema;

use crate::Fixture;
use crate::cases::{migrated, ok};
use crate::spec::normalized_default;
use crate::system_tables::{SystemTable, system_tables};

/// The `jadpo_*` tables are exactly the reference's, each with exactly its shape.
pub async fn system_tables_have_their_recorded_shape(fx: &dyn Fixture) {
    let store = migrated(fx).await;
    let reference = system_tables(fx.dialect());
    let found: BTreeSet<String> = ok(store.schema_tables().await, "tables")
        .into_iter()
        .filter(|t| t.starts_with("jadpo_"))
        .collect();
    let expected: BTreeSet<String> = reference.iter().map(|t| t.name.to_owned()).collect();
    assert_eq!(found, expected, "{}: the jadpo_* tables", fx.dialect());
    for table in reference {
        let actual = ok(store.schema_table(table.name).await, "describe");
        let actual = actual.unwrap_or_else(|| panic!("{} missing", table.name));
        compare(fx.dialect(), table, &actual);
    }
}

fn compare(dialect: jadpo_core::Dialect, expected: &SystemTable, actual: &TableSchema) {
    let t = format!("{dialect} {}", expected.name);
    let columns: Vec<(String, String, bool, Option<String>)> = actual
        .columns
        .iter()
        .map(|c| {
            let default = c.default.as_deref().map(normalized_default);
            (c.name.clone(), c.data_type.clone(), c.not_null, default)
        })
        .collect();
    let wanted: Vec<(String, String, bool, Option<String>)> = expected
        .columns
        .iter()
        .map(|(n, ty, nn, d)| ((*n).to_owned(), (*ty).to_owned(), *nn, d.map(str::to_owned)))
        .collect();
    assert_eq!(columns, wanted, "{t}: columns (name, type, NOT NULL, default), in order");
    assert_eq!(actual.primary_key, expected.primary_key, "{t}: primary key");
    let fks: BTreeSet<(String, String, String, String)> = actual
        .foreign_keys
        .iter()
        .map(|f| {
            let (cols, refs) = (f.columns.join(","), f.references_columns.join(","));
            (cols, f.references_table.clone(), refs, f.on_delete.clone())
        })
        .collect();
    let wanted_fks: BTreeSet<(String, String, String, String)> = expected
        .foreign_keys
        .iter()
        .map(|(c, t, r, d)| ((*c).to_owned(), (*t).to_owned(), (*r).to_owned(), (*d).to_owned()))
        .collect();
    assert_eq!(fks, wanted_fks, "{t}: foreign keys");
    let indexes: BTreeSet<(Vec<String>, bool)> = actual
        .indexes
        .iter()
        .filter(|i| !(i.unique && i.columns == actual.primary_key))
        .map(|i| (i.columns.clone(), i.unique))
        .collect();
    let wanted_indexes: BTreeSet<(Vec<String>, bool)> = expected
        .indexes
        .iter()
        .map(|(cols, unique)| (cols.iter().map(|c| (*c).to_owned()).collect(), *unique))
        .collect();
    assert_eq!(indexes, wanted_indexes, "{t}: indexes besides the primary key's (columns, unique)");
}
