//! The statement contract on this dialect: every statement's text uses exactly the parameters
//! its slot declares, `$1` … `$N`, so no binding can shift a value into the wrong column.

use std::time::Duration;

use jadpo_core::model::audit::AuditSpec;
use jadpo_store_sqlite::DIALECT;

#[test]
fn every_statement_uses_exactly_the_parameters_its_slot_declares() {
    let probe = AuditSpec {
        entity: "note".into(),
        store: "main".into(),
        table: "notes".into(),
        columns: vec!["title".into(), "body".into()],
        retention: Duration::from_secs(60),
    };
    let slots = DIALECT.slots(&probe).unwrap_or_else(|e| panic!("{e}"));
    let wrong: Vec<String> = slots.iter().filter_map(jadpo_store_sql::check).collect();
    assert!(
        wrong.is_empty(),
        "statements that break their slot's declaration:\n{}",
        wrong.join("\n")
    );
    // Every role's table is read: a slot list that lost a table would pass vacuously.
    assert!(slots.len() >= 100, "only {} slots read", slots.len());
    assert!(slots.iter().any(|s| s.name == "ExecutionLayout.update"));
}
